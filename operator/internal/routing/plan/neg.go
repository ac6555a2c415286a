package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// GKE's NEG annotations ("On GKE": "A Service is in NEGs when"). Both are
// outside input: anything unreadable is an error, and a Service whose
// annotation is unreadable is treated as not in NEGs by that rule.

// NEG is what the GKE annotation cloud.google.com/neg asks for.
type NEG struct {
	// Ingress is {"ingress": true}: NEGs if a GKE Ingress uses the Service.
	Ingress bool
	// ExposedPorts are the Service ports standalone NEGs are asked for
	// (exposed_ports), as GKE Gateway sets, sorted.
	ExposedPorts []int32
}

// errNotObject is the wrong shape: GKE's NEG annotations are JSON objects.
var errNotObject = errors.New("not a JSON object")

// ParseNEG reads a cloud.google.com/neg value such as `{"ingress": true}` or
// `{"exposed_ports": {"80": {}}}`. An empty value asks for nothing. A value
// that is not JSON, or JSON of another shape (not an object, ingress not a
// boolean, exposed_ports not an object of port numbers to objects), is an
// error and asks for nothing.
func ParseNEG(s string) (NEG, error) {
	if strings.TrimSpace(s) == "" {
		return NEG{}, nil
	}
	var v struct {
		Ingress      *bool                      `json:"ingress"`
		ExposedPorts map[string]json.RawMessage `json:"exposed_ports"`
	}
	if err := unmarshalObject(s, &v); err != nil {
		return NEG{}, fmt.Errorf("reading %s: %w", napwakev1alpha1.AnnotationGKENEG, err)
	}
	var n NEG
	for k, raw := range v.ExposedPorts {
		p, err := portKey(k)
		if err != nil {
			return NEG{}, fmt.Errorf("reading %s: exposed_ports: %w", napwakev1alpha1.AnnotationGKENEG, err)
		}
		if !isObject(raw) {
			return NEG{}, fmt.Errorf("reading %s: exposed_ports %q: %w", napwakev1alpha1.AnnotationGKENEG, k, errNotObject)
		}
		n.ExposedPorts = append(n.ExposedPorts, p)
	}
	slices.Sort(n.ExposedPorts)
	n.Ingress = v.Ingress != nil && *v.Ingress
	return n, nil
}

// NEGStatus is what GKE's NEG controller wrote in cloud.google.com/neg-status.
type NEGStatus struct {
	// Ports are the Service ports it lists NEGs for, sorted.
	Ports []int32
}

// ParseNEGStatus reads a cloud.google.com/neg-status value such as
// `{"network_endpoint_groups":{"80":"k8s1-abc"},"zones":["europe-west1-b"]}`.
// An empty value lists nothing. A value that is not JSON, or JSON of
// another shape (not an object, no network_endpoint_groups object of port
// numbers to NEG names, zones not a list of strings), is an error and lists
// nothing.
func ParseNEGStatus(s string) (NEGStatus, error) {
	if strings.TrimSpace(s) == "" {
		return NEGStatus{}, nil
	}
	var v struct {
		NEGs  map[string]string `json:"network_endpoint_groups"`
		Zones []string          `json:"zones"`
	}
	if err := unmarshalObject(s, &v); err != nil {
		return NEGStatus{}, fmt.Errorf("reading %s: %w", napwakev1alpha1.AnnotationGKENEGStatus, err)
	}
	if v.NEGs == nil {
		return NEGStatus{}, fmt.Errorf("reading %s: no network_endpoint_groups object", napwakev1alpha1.AnnotationGKENEGStatus)
	}
	var st NEGStatus
	for k, name := range v.NEGs {
		p, err := portKey(k)
		if err != nil {
			return NEGStatus{}, fmt.Errorf("reading %s: network_endpoint_groups: %w", napwakev1alpha1.AnnotationGKENEGStatus, err)
		}
		if name == "" {
			return NEGStatus{}, fmt.Errorf("reading %s: network_endpoint_groups %q: no NEG name", napwakev1alpha1.AnnotationGKENEGStatus, k)
		}
		st.Ports = append(st.Ports, p)
	}
	slices.Sort(st.Ports)
	return st, nil
}

// unmarshalObject decodes s, which must be one JSON object, into v.
func unmarshalObject(s string, v any) error {
	if !isObject(json.RawMessage(s)) {
		return errNotObject
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("not the JSON GKE writes: %w", err)
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	t := strings.TrimLeft(string(raw), " \t\r\n")
	return strings.HasPrefix(t, "{") && json.Valid(raw)
}

func portKey(k string) (int32, error) {
	n, err := strconv.ParseInt(k, 10, 32)
	if err != nil || n < 1 || n > 65535 || strconv.FormatInt(n, 10) != k {
		return 0, fmt.Errorf("%q is not a port number", k)
	}
	return int32(n), nil
}

// gkeIngressClasses are the kubernetes.io/ingress.class values GKE's Ingress
// controller serves; an Ingress with none of the annotation (and no
// ingressClassName) is GKE's too.
var gkeIngressClasses = map[string]bool{
	"gce": true, "gce-internal": true, "gce-regional-external": true, "gce-multi-cluster": true,
}

// InNEGs says why the Service is in GKE network endpoint groups, by the three
// rules in "On GKE", or "" when it is not. invalid names each annotation it
// could not read, or that names a port the Service does not have: that rule
// then does not count, and the user is told (an InvalidSetting event).
func InNEGs(svc *corev1.Service, ingresses []networkingv1.Ingress) (why string, invalid []string) {
	bad := func(err error) {
		invalid = append(invalid, fmt.Sprintf("Service %s: %v; not counted as in GKE NEGs", svc.Name, err))
	}
	var whys []string
	if v, ok := svc.Annotations[napwakev1alpha1.AnnotationGKENEGStatus]; ok {
		st, err := ParseNEGStatus(v)
		if err == nil {
			err = portsExist(svc, napwakev1alpha1.AnnotationGKENEGStatus, st.Ports)
		}
		switch {
		case err != nil:
			bad(err)
		case len(st.Ports) > 0:
			whys = append(whys, "GKE's NEG controller lists NEGs of its pods ("+napwakev1alpha1.AnnotationGKENEGStatus+")")
		}
	}
	neg, err := ParseNEG(svc.Annotations[napwakev1alpha1.AnnotationGKENEG])
	if err == nil {
		err = portsExist(svc, napwakev1alpha1.AnnotationGKENEG+" exposed_ports", neg.ExposedPorts)
	}
	if err != nil {
		bad(err)
		neg = NEG{}
	}
	if len(neg.ExposedPorts) > 0 {
		whys = append(whys, "standalone NEGs (exposed_ports in "+napwakev1alpha1.AnnotationGKENEG+")")
	}
	if neg.Ingress {
		for i := range ingresses {
			if isGKEIngress(&ingresses[i]) && ingressUses(&ingresses[i], svc.Name) {
				whys = append(whys, "GKE Ingress "+ingresses[i].Name+" uses it")
				break
			}
		}
	}
	if len(whys) == 0 {
		return "", invalid
	}
	return whys[0], invalid
}

// portsExist reports the listed ports the Service does not have.
func portsExist(svc *corev1.Service, what string, ports []int32) error {
	var missing []string
	for _, p := range ports {
		if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Port == p }) {
			missing = append(missing, strconv.Itoa(int(p)))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s names port %s, which the Service does not have", what, strings.Join(missing, ", "))
	}
	return nil
}

func isGKEIngress(ing *networkingv1.Ingress) bool {
	if class, ok := ing.Annotations[napwakev1alpha1.AnnotationIngressClass]; ok {
		return gkeIngressClasses[class]
	}
	return ing.Spec.IngressClassName == nil
}

func ingressUses(ing *networkingv1.Ingress, service string) bool {
	uses := func(b *networkingv1.IngressBackend) bool {
		return b != nil && b.Service != nil && b.Service.Name == service
	}
	if uses(ing.Spec.DefaultBackend) {
		return true
	}
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for i := range r.HTTP.Paths {
			if uses(&r.HTTP.Paths[i].Backend) {
				return true
			}
		}
	}
	return false
}
