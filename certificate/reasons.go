package certificate

// Every reason a decision gives, in one place. Each is a stable string for a
// condition's reason, an event, a log field or a metric label; the message
// that goes with it says what was found, and when something happens next.
// Each constant is named after its value: ReasonX is "X".

// Why a certificate is (re)issued: the trigger's checks, in the order the
// chain runs them, then renewal. The reason is recorded on the Issuing
// condition and in Result.IssuanceReason for as long as the issuance runs,
// and is Ready's reason while the secret shows the problem.
const (
	// ReasonDoesNotExist: the target secret does not exist.
	ReasonDoesNotExist = "DoesNotExist"
	// ReasonMissingData: the secret lacks tls.crt or tls.key.
	ReasonMissingData = "MissingData"
	// ReasonInvalidKeyPair: tls.crt or tls.key cannot be decoded, or the
	// key is not the certificate's.
	ReasonInvalidKeyPair = "InvalidKeyPair"
	// ReasonTemporaryCertificate: the secret holds a temporary certificate
	// (keys.IsTemporaryCertificate), written while an issuance runs
	// (spec.issueTemporaryCertificate), not an issued one. The certificate
	// is not Ready until the issued certificate replaces it.
	ReasonTemporaryCertificate = "TemporaryCertificate"
	// ReasonIncorrectIssuer: the secret's issuer annotations name another
	// issuer than spec.issuerRef.
	ReasonIncorrectIssuer = "IncorrectIssuer"
	// ReasonSecretOwnedByOtherCertificate: the secret's certificate-name
	// annotation names another certificate, which no longer claims the
	// secret.
	ReasonSecretOwnedByOtherCertificate = "SecretOwnedByOtherCertificate"
	// ReasonPrivateKeyMismatchesSpec: the key in the secret does not meet
	// spec.privateKey.
	ReasonPrivateKeyMismatchesSpec = "PrivateKeyMismatchesSpec"
	// ReasonSecretKeyMismatchesRequest: the key in the secret is not the key
	// of the request that issued the current revision.
	ReasonSecretKeyMismatchesRequest = "SecretKeyMismatchesRequest"
	// ReasonRequestChanged: the request of the current revision no longer
	// matches the spec (names, subject, usages, isCA, issuer, duration, key
	// spec).
	ReasonRequestChanged = "RequestChanged"
	// ReasonCertificateChanged: with no request of the current revision,
	// the issued certificate's names no longer match the spec.
	ReasonCertificateChanged = "CertificateChanged"
	// ReasonRenewing: renewal is due (renewal time, ARI window, renewal
	// windows and their fail-safe).
	ReasonRenewing = "Renewing"
	// ReasonManualTrigger: for a host to give when it sets Issuing to True
	// itself, to renew now; no stage gives it. While Issuing is True, with
	// any reason, the trigger, backoff included, stands aside.
	ReasonManualTrigger = "ManualTrigger"
)

// What the trigger and readiness say when nothing is issued.
const (
	// ReasonUpToDate: every check passed and renewal is not due; the
	// message says when renewal is due.
	ReasonUpToDate = "UpToDate"
	// ReasonReady: Ready's reason when every check passes.
	ReasonReady = "Ready"
	// ReasonExpired: the certificate's notAfter has passed (readiness).
	ReasonExpired = "Expired"
	// ReasonIssuingInProgress: Issuing is True; the trigger waits.
	ReasonIssuingInProgress = "IssuingInProgress"
	// ReasonBackoff: issuance is needed but a recent failure holds it back;
	// the message says until when.
	ReasonBackoff = "Backoff"
	// ReasonSecretInUse: another certificate owns the target secret; this
	// one writes nothing to it.
	ReasonSecretInUse = "SecretInUse"
	// ReasonSecretNotOwned: the target secret holds data that neither
	// certlife nor the reference operator wrote — it is not owned by the
	// certificate and carries neither's annotations — such as a CA key
	// pair a user made by hand. Nothing touches it: no key is made, no
	// request created, nothing written into it; Ready is False with this
	// reason, and the message names the secret, what it holds, and how to
	// hand it over (AnnotationAllowTakeover "true" on the secret). The
	// secret's change brings the next pass through the host's watch; a
	// host without one looks again on fixed ticks of
	// Config.SecretInUseRecheck. A secret with no data, or only empty
	// values, is filled as usual.
	ReasonSecretNotOwned = "SecretNotOwned"
	// ReasonSecretNotCaughtUp: the status records an issuance whose
	// certificate the secret does not show yet. Within Config.CacheGrace of
	// the request that is a read cache behind its writes, and the stages
	// wait instead of issuing again. While the secret is missing, Ready is
	// Unknown with this reason and a message that says until when; unless
	// the host confirmed the absence (Snapshot.SecretAbsenceConfirmed),
	// when the secret is issued again at once (ReasonDoesNotExist).
	ReasonSecretNotCaughtUp = "SecretNotCaughtUp"
	// ReasonSecretDrifted: the certificate in the secret is right, but the
	// secret is not what the spec asks around it (secretTemplate labels
	// and annotations, certlife's annotations, tls.key's encoding,
	// additional output formats, keystores). The issuing stage rewrites it
	// from the key and chain it holds: no new key, no new request.
	ReasonSecretDrifted = "SecretDrifted"
	// ReasonInvalidSpec: the spec is invalid; nothing is issued until it is
	// corrected. The message holds every field error.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonNoCertificate: the snapshot holds no certificate
	// (Result.Err says so too).
	ReasonNoCertificate = "NoCertificate"
	// ReasonInvalidInput: the snapshot or the time cannot be decided on —
	// a certificate without a name or UID, a zero now. Result.Err names the
	// field; there are no actions.
	ReasonInvalidInput = "InvalidInput"
)

// The keymanager's reasons.
const (
	// ReasonNotIssuing: not issuing; stages that only act during an
	// issuance stand aside (the keymanager deletes next private keys).
	ReasonNotIssuing = "NotIssuing"
	// ReasonWaitingForKey: the next private key is being created or is not
	// readable yet.
	ReasonWaitingForKey = "WaitingForKey"
	// ReasonKeyReady: the next private key exists and meets the spec.
	ReasonKeyReady = "KeyReady"
)

// The requestmanager's reasons.
const (
	// ReasonRequestCreated: the request for the next revision is created.
	ReasonRequestCreated = "RequestCreated"
	// ReasonRequestPending: the request for the next revision exists and
	// the issuer has not answered it (or an outdated one is being
	// replaced).
	ReasonRequestPending = "RequestPending"
	// ReasonRevisionHistory: requests of revisions beyond
	// spec.revisionHistoryLimit are deleted.
	ReasonRevisionHistory = "RevisionHistory"
)

// The issuing stage's reasons.
const (
	// ReasonIssued: the issued certificate is written into the secret and
	// the new revision recorded.
	ReasonIssued = "Issued"
	// ReasonRequestOutdated: the request of the next revision was answered,
	// but it no longer matches the spec or its CSR is not for the next
	// private key. The answer is not used — neither written nor counted as
	// a failure — and the requestmanager replaces the request.
	ReasonRequestOutdated = "RequestOutdated"
	// ReasonRevisionAdopted: the secret holds the certificate of a request
	// whose revision the status does not record (a host stopped between
	// writing the secret and writing the status); the revision is recorded.
	ReasonRevisionAdopted = "RevisionAdopted"
	// ReasonWritingTemporaryCertificate: the issuance runs, the secret
	// holds no usable certificate and key, and the spec asks for a
	// temporary certificate meanwhile: it is written
	// (WriteTemporaryCertificate).
	ReasonWritingTemporaryCertificate = "WritingTemporaryCertificate"
	// ReasonSecretRepair: the secret drifted (see ReasonSecretDrifted) and
	// is rewritten from the key and chain it holds.
	ReasonSecretRepair = "SecretRepair"
	// ReasonIssuerNotAnswering: no issuer has touched the request of the
	// next revision (no Ready condition) within Config.IssuerGrace of its
	// creation. The Issuing condition's message (and Ready's, while the
	// certificate is not Ready) names the request and its issuerRef and
	// asks whether an issuer for it is running. Not a failure: nothing
	// backs off, and the request is used as soon as an issuer answers it.
	ReasonIssuerNotAnswering = "IssuerNotAnswering"
)

// Why an issuance failed: the Issuing=False condition's reason and the
// issuing stage's, recorded with lastFailureTime so the backoff applies.
// The first three are the issuer's own answer on the request;
// RequestNotBuildable is a request the host could not build; the others
// are a certificate the issuer returned that cannot be used.
const (
	// ReasonDenied: the request was denied (its Denied condition).
	ReasonDenied = "Denied"
	// ReasonInvalidRequest: the issuer found the request invalid (its
	// InvalidRequest condition).
	ReasonInvalidRequest = "InvalidRequest"
	// ReasonFailed: the issuer failed the request (Ready=False,
	// reason Failed).
	ReasonFailed = "Failed"
	// ReasonIssuedUndecodable: the issuer returned a chain, or a CA, that
	// cannot be decoded.
	ReasonIssuedUndecodable = "IssuedUndecodable"
	// ReasonIssuedWrongKey: the issuer returned a certificate for another
	// key than the request's.
	ReasonIssuedWrongKey = "IssuedWrongKey"
	// ReasonIssuedExpired: the issuer returned a certificate that has
	// already expired.
	ReasonIssuedExpired = "IssuedExpired"
	// ReasonIssuedOtherNames: the issuer returned a certificate for other
	// names than the spec's.
	ReasonIssuedOtherNames = "IssuedOtherNames"
	// ReasonRequestNotBuildable: no certificate signing request can be
	// built from the spec (keys.RequestTemplate.Validate refuses its
	// template), so
	// the requestmanager asks for none; the message says which field and
	// value. Validate refuses every such spec itself, so seeing this
	// reason means the two disagree: correct the spec the message names,
	// and report it.
	ReasonRequestNotBuildable = "RequestNotBuildable"
	// ReasonIssuedDueForRenewal: the issuer returned a certificate that is
	// already due for renewal when it arrives — the renewal decision on it
	// (the spec's renewBefore or percentage, the renewal policy, the
	// Config's renewal options; not the ARI window of the certificate it
	// replaces) says renew now: a CA that returned an old certificate, or
	// a host clock ahead of the CA's. Writing it would start the next
	// issuance at once, a loop; as a failure it backs off. A CA that issues
	// a shorter lifetime than the spec asks is not this: renewal adapts to
	// the lifetime (package renewal), so its certificate is due later.
	ReasonIssuedDueForRenewal = "IssuedDueForRenewal"
)

// Why a certificate with fallback issuers (Spec.FallbackIssuerRefs) names
// the issuer it does: Status.Issuer's reason, and the words after "using"
// in the Issuing condition's message. ReasonAllIssuersUnhealthy is the
// requestmanager's when it holds a request back.
const (
	// ReasonFirstIssuer: a new revision starts with spec.issuerRef.
	ReasonFirstIssuer = "FirstIssuer"
	// ReasonIssuerFailedRepeatedly: the previous issuer failed
	// Config.FallbackAfterFailures issuances in a row.
	ReasonIssuerFailedRepeatedly = "IssuerFailedRepeatedly"
	// ReasonIssuerRetryAfter: the previous issuer's CA asked to wait
	// longer than Config.FallbackRetryAfter (Retry-After). Its Retry-After
	// does not hold back the request to the next issuer; the backoff
	// does.
	ReasonIssuerRetryAfter = "IssuerRetryAfter"
	// ReasonIssuerNotReady: the previous issuer left the request
	// unanswered for Config.FallbackPending — no issuer touched it, or it
	// kept it pending (an ACME issuer that cannot reach its CA does). The
	// request is replaced by one to the next issuer; no failure is
	// recorded and nothing backs off.
	ReasonIssuerNotReady = "IssuerNotReady"
	// ReasonIssuerUnhealthy: the host reports the issuer the rules chose
	// unhealthy (Snapshot.IssuerHealth: it failed for other certificates
	// too), so the next one is used.
	ReasonIssuerUnhealthy = "IssuerUnhealthy"
	// ReasonAllIssuersUnhealthy: the host reports every issuer of the
	// certificate unhealthy; no request is made until the first of them
	// may be tried again, which the message names.
	ReasonAllIssuersUnhealthy = "AllIssuersUnhealthy"
)
