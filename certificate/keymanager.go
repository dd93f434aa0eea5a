package certificate

import (
	"time"

	"github.com/certlife/certlife/keys"
)

func issuing(c *Certificate) *Condition {
	if cond := c.Status.Condition(ConditionIssuing); cond != nil && cond.Status == StatusTrue {
		return cond
	}
	return nil
}

func nextRevision(c *Certificate) int {
	if r := c.Status.Revision; r != nil && *r >= 0 {
		return *r + 1
	}
	return 1
}

// KeyManager is the keymanager stage. While Issuing is True it makes sure
// exactly one next-private-key secret exists, meets the key spec, and is
// named in status.nextPrivateKeySecretName: it creates one when none
// exists, adopts the one that exists when status lost it, regenerates on a
// spec change, and deletes extras. When not issuing it deletes them all.
// With rotation policy Never it reuses the key of the target secret while
// that key meets the spec, and says so when it cannot. With an invalid spec,
// or a target secret that holds data certlife did not write
// (ReasonSecretNotOwned), it makes no key.
func KeyManager(s *Snapshot, now time.Time, cfg Config) Result {
	if res, ok := checkInput(s, now, StageKeyManager); !ok {
		return res
	}
	p := newPass(s, now, cfg)
	return finish(p, keymanager(p))
}

func keymanager(p *pass) Result {
	c := p.cert
	// Only the next key's name changes here.
	st := c.Status
	var acts []Action
	deleteAllBut := func(keep string, why string) {
		for _, k := range p.nextKeys {
			if k.secret.Name != keep {
				acts = append(acts, DeleteSecret{Name: k.secret.Name, Reason: why})
			}
		}
	}
	finish := func(reason, msg string) Result {
		if st.NextPrivateKeySecretName != c.Status.NextPrivateKeySecretName {
			acts = append(acts, UpdateStatus{Status: cloneStatus(st)})
		}
		return Result{Stage: StageKeyManager, Actions: acts, Reason: reason, Message: msg}
	}
	if issuing(c) == nil {
		deleteAllBut("", "not issuing")
		st.NextPrivateKeySecretName = ""
		return finish(ReasonNotIssuing, "not issuing: no next private key is kept")
	}
	if p.specErr != nil {
		return finish(ReasonInvalidSpec, "no next private key is made until the spec is corrected")
	}
	if held := heldSecret(p); held != nil {
		return finish(ReasonSecretNotOwned, "no next private key is made: "+heldMessage(p, held))
	}
	spec := c.Spec.KeySpec()
	name := nextKeySecretName(c, nextRevision(c), spec)

	if cur := st.NextPrivateKeySecretName; cur != "" {
		k := p.nextKey(cur)
		switch {
		case cur != name:
			deleteAllBut("", "the key spec or revision changed")
			st.NextPrivateKeySecretName = ""
			return finish(ReasonWaitingForKey, "the next private key "+cur+" is for another key spec or revision; a new one is made next")
		case k == nil:
			// Missing from the cache: created by a pass the cache has not
			// seen, or deleted by hand. Creating again is safe.
			acts = append(acts, generate(p, name, spec))
			return finish(ReasonWaitingForKey, "creating the next private key "+name)
		case k.err != nil:
			deleteAllBut("", "the next private key cannot be decoded")
			st.NextPrivateKeySecretName = ""
			return finish(ReasonWaitingForKey, "the next private key "+cur+" cannot be decoded; it is replaced")
		}
		if m := keys.SpecMismatches(k.key.Public(), spec); m != nil {
			deleteAllBut("", "the next private key does not meet the spec")
			st.NextPrivateKeySecretName = ""
			return finish(ReasonWaitingForKey, "the next private key "+cur+" does not meet the spec; it is replaced")
		}
		deleteAllBut(cur, "an extra next private key")
		return finish(ReasonKeyReady, "the next private key is "+cur)
	}
	if p.nextKey(name) != nil {
		deleteAllBut(name, "an extra next private key")
		st.NextPrivateKeySecretName = name
		return finish(ReasonKeyReady, "adopted the next private key "+name+" that status had lost")
	}
	deleteAllBut("", "an extra next private key")
	g := generate(p, name, spec)
	msg := "creating the next private key " + name
	if g.ReuseFrom != "" {
		msg += " from the key in " + g.ReuseFrom + " (rotation policy Never)"
	} else if spec.RotationPolicy == keys.RotationNever {
		msg += ": rotation policy Never, but the key in " + c.Spec.SecretName + " cannot be reused (missing, undecodable or not meeting the spec), so a new key is generated"
	}
	acts = append(acts, g)
	st.NextPrivateKeySecretName = name
	return finish(ReasonWaitingForKey, msg)
}

// generate builds the GenerateKey action, reusing the target secret's key
// under rotation policy Never when it meets the spec.
func generate(p *pass, name string, spec keys.KeySpec) GenerateKey {
	g := GenerateKey{SecretName: name, OwnerUID: p.cert.UID, Spec: spec}
	if spec.RotationPolicy == keys.RotationNever && p.parsed != nil && p.parsed.Key != nil &&
		keys.SpecMismatches(p.parsed.Key.Public(), spec) == nil {
		g.ReuseFrom = p.secret.Name
	}
	return g
}
