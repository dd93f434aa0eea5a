package operator

import (
	"strings"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapi "sigs.k8s.io/gateway-api/apis/v1"
)

// gatewayShim is the Gateway kind: one Certificate per Secret its
// listeners name, for the hostnames of the listeners that name it.
//
// As the reference operator's gateway-shim: a listener counts when its
// protocol is HTTPS or TLS, its TLS mode is Terminate, and its name is
// not listed in cert-manager.io/ignore-tls-listeners; a listener in
// Passthrough mode is passed over quietly. One that counts but has no
// hostname, no TLS certificateRefs, a reference to something other than
// a core Secret or a Secret in another namespace is skipped with a
// Warning Event naming the field.
func gatewayShim() shimKind {
	return shimKind{
		gvk:     gwapi.SchemeGroupVersion.WithKind(kindGateway),
		newObj:  func() client.Object { return &gwapi.Gateway{} },
		newList: func() client.ObjectList { return &gwapi.GatewayList{} },
		names: func(l client.ObjectList) []string {
			var out []string
			for _, o := range l.(*gwapi.GatewayList).Items {
				out = append(out, o.Name)
			}
			return out
		},
		entries: gatewayEntries,
		secrets: func(obj client.Object) []string {
			var out []string
			for _, l := range obj.(*gwapi.Gateway).Spec.Listeners {
				if l.TLS == nil {
					continue
				}
				for _, ref := range l.TLS.CertificateRefs {
					out = append(out, string(ref.Name))
				}
			}
			return out
		},
	}
}

func gatewayEntries(obj client.Object) ([]tlsEntry, []string, error) {
	gw := obj.(*gwapi.Gateway)
	ignored := map[string]bool{}
	for _, name := range strings.Split(gw.Annotations[cmapi.CertificateIgnoreTLSListeners], ",") {
		ignored[strings.TrimSpace(name)] = true
	}
	var (
		out     []tlsEntry
		skipped []string
		index   = map[string]int{}
	)
	for i, l := range gw.Spec.Listeners {
		if l.Protocol != gwapi.HTTPSProtocolType && l.Protocol != gwapi.TLSProtocolType {
			continue
		}
		if l.TLS != nil && l.TLS.Mode != nil && *l.TLS.Mode == gwapi.TLSModePassthrough {
			continue
		}
		if ignored[string(l.Name)] {
			continue
		}
		if errs := validListener(field.NewPath("spec", "listeners").Index(i), l, gw.Namespace); len(errs) > 0 {
			skipped = append(skipped, "Skipped a listener: "+errs.ToAggregate().Error())
			continue
		}
		for _, ref := range l.TLS.CertificateRefs {
			name := string(ref.Name)
			j, ok := index[name]
			if !ok {
				j = len(out)
				index[name] = j
				out = append(out, tlsEntry{secret: name})
			}
			out[j].hosts = append(out[j].hosts, string(*l.Hostname))
		}
	}
	return out, skipped, nil
}

// validListener checks a TLS listener the shim makes a Certificate for.
func validListener(path *field.Path, l gwapi.Listener, namespace string) field.ErrorList {
	var errs field.ErrorList
	if l.Hostname == nil || *l.Hostname == "" {
		errs = append(errs, field.Required(path.Child("hostname"), "the name to certify"))
	}
	if l.TLS == nil {
		return append(errs, field.Required(path.Child("tls"), "the TLS settings naming the Secret"))
	}
	if l.TLS.Mode == nil {
		errs = append(errs, field.Required(path.Child("tls", "mode"), ""))
	} else if *l.TLS.Mode != gwapi.TLSModeTerminate {
		errs = append(errs, field.NotSupported(path.Child("tls", "mode"), *l.TLS.Mode, []string{string(gwapi.TLSModeTerminate)}))
	}
	if len(l.TLS.CertificateRefs) == 0 {
		errs = append(errs, field.Required(path.Child("tls", "certificateRefs"), "the Secret to keep the certificate in"))
	}
	for i, ref := range l.TLS.CertificateRefs {
		p := path.Child("tls", "certificateRefs").Index(i)
		if ref.Group != nil && *ref.Group != "" && *ref.Group != "core" {
			errs = append(errs, field.NotSupported(p.Child("group"), *ref.Group, []string{"", "core"}))
		}
		if ref.Kind != nil && *ref.Kind != "" && *ref.Kind != "Secret" {
			errs = append(errs, field.NotSupported(p.Child("kind"), *ref.Kind, []string{"Secret"}))
		}
		if ref.Namespace != nil && string(*ref.Namespace) != namespace {
			errs = append(errs, field.Invalid(p.Child("namespace"), *ref.Namespace, "a Secret in another namespace: the Certificate is made in the Gateway's"))
		}
	}
	return errs
}
