package certificate

// Reasons a trigger check gives for issuing, in the order the chain
// evaluates them. Each is a stable string for a condition reason or a metric
// label; the message that goes with it says what was found.
const (
	// ReasonDoesNotExist: the target secret does not exist.
	ReasonDoesNotExist = "DoesNotExist"
	// ReasonMissingData: the secret lacks tls.crt or tls.key.
	ReasonMissingData = "MissingData"
	// ReasonInvalidKeyPair: tls.crt or tls.key cannot be decoded, or the
	// key is not the certificate's.
	ReasonInvalidKeyPair = "InvalidKeyPair"
	// ReasonIncorrectIssuer: the secret's issuer annotations name another
	// issuer than spec.issuerRef.
	ReasonIncorrectIssuer = "IncorrectIssuer"
	// ReasonSecretOwnedByOther: the secret's certificate-name annotation
	// names another certificate. The trigger does not issue over it; see
	// ReasonSecretInUse.
	ReasonSecretOwnedByOther = "SecretOwnedByOtherCertificate"
	// ReasonKeyMismatchesSpec: the key in the secret does not meet
	// spec.privateKey.
	ReasonKeyMismatchesSpec = "PrivateKeyMismatchesSpec"
	// ReasonKeyMismatchesRequest: the key in the secret is not the key of
	// the request that issued the current revision.
	ReasonKeyMismatchesRequest = "SecretKeyMismatchesRequest"
	// ReasonRequestChanged: the request of the current revision no longer
	// matches the spec (names, subject, usages, isCA, issuer, duration).
	ReasonRequestChanged = "RequestChanged"
	// ReasonCertificateChanged: with no request of the current revision,
	// the issued certificate's names no longer match the spec.
	ReasonCertificateChanged = "CertificateChanged"
	// ReasonRenewing: the renewal package says renewal is due.
	ReasonRenewing = "Renewing"
	// ReasonExpired: the certificate's notAfter has passed (readiness).
	ReasonExpired = "Expired"
)

// Reasons of a stage's result when it does not issue.
const (
	// ReasonUpToDate: every check passed; the result says when to look
	// again.
	ReasonUpToDate = "UpToDate"
	// ReasonIssuingInProgress: Issuing is True; the trigger waits.
	ReasonIssuingInProgress = "IssuingInProgress"
	// ReasonBackoff: issuance is needed but a recent failure holds it back.
	ReasonBackoff = "Backoff"
	// ReasonNoCertificate: the snapshot holds no certificate.
	ReasonNoCertificate = "NoCertificate"
	// ReasonInvalidSpec: the spec is invalid; nothing is issued until it is
	// corrected.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSecretInUse: another certificate owns the target secret.
	ReasonSecretInUse = "SecretInUse"
	// ReasonManualTrigger: Issuing was set by hand (a manual trigger).
	ReasonManualTrigger = "ManualTrigger"
	// ReasonSecretNotCaughtUp: the status records an issuance whose
	// certificate the secret does not show yet; within Config.CacheGrace of
	// the request that is a read cache behind its writes, and the trigger
	// waits instead of issuing again.
	ReasonSecretNotCaughtUp = "SecretNotCaughtUp"
)
