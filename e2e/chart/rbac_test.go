package chart

import (
	"context"
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// access is one question to the API server's RBAC authorizer.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	if a.name != "" {
		r += " " + a.name
	}
	if a.namespace != "" {
		r += " in " + a.namespace
	}
	return a.verb + " " + r
}

// allowed asks the API server whether user (a ServiceAccount) may do a.
func allowed(t *testing.T, user string, a access) bool {
	t.Helper()
	return review(t, user, []string{"system:authenticated", "system:serviceaccounts", "system:serviceaccounts:" + namespace}, a)
}

// review asks the API server's authorizer whether user, in groups, may do a.
func review(t *testing.T, user string, groups []string, a access) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
		},
	}}
	got, err := clientsAs(t, "").kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.Allowed
}

// testRBAC checks, against the installed roles, that each component may do
// what its job needs and nothing next to it.
func testRBAC(t *testing.T) {
	const app = appNS
	cases := []struct {
		user string
		a    access
		want bool
	}{
		// The doorman.
		{doormanUser, access{"watch", "napwake.dev", "managedworkloads", "", "", ""}, true},
		{doormanUser, access{"patch", "napwake.dev", "managedworkloads", "", app, "api"}, true},
		{doormanUser, access{"update", "napwake.dev", "managedworkloads", "", app, "api"}, false},
		{doormanUser, access{"create", "napwake.dev", "managedworkloads", "", app, ""}, false},
		{doormanUser, access{"delete", "napwake.dev", "managedworkloads", "", app, "api"}, false},
		{doormanUser, access{"patch", "napwake.dev", "managedworkloads", "status", app, "api"}, false},
		{doormanUser, access{"list", "discovery.k8s.io", "endpointslices", "", "", ""}, true},
		{doormanUser, access{"create", "discovery.k8s.io", "endpointslices", "", app, ""}, false},
		{doormanUser, access{"watch", "", "pods", "", "", ""}, true},
		{doormanUser, access{"create", "", "events", "", app, ""}, true},
		{doormanUser, access{"get", "", "secrets", "", namespace, wakeKeySecret}, true},
		{doormanUser, access{"update", "", "secrets", "", namespace, wakeKeySecret}, true},
		{doormanUser, access{"delete", "", "secrets", "", namespace, wakeKeySecret}, false},
		{doormanUser, access{"patch", "", "secrets", "", namespace, wakeKeySecret}, false},
		{doormanUser, access{"create", "", "secrets", "", namespace, ""}, false},
		{doormanUser, access{"list", "", "secrets", "", namespace, ""}, false},
		{doormanUser, access{"watch", "", "secrets", "", namespace, ""}, false},
		{doormanUser, access{"get", "", "secrets", "", namespace, "napwake-operator-token"}, false},
		{doormanUser, access{"get", "", "secrets", "", app, wakeKeySecret}, false},
		{doormanUser, access{"get", "", "services", "", app, "api"}, true},
		{doormanUser, access{"watch", "", "services", "", "", ""}, true},
		{doormanUser, access{"update", "", "services", "", app, "api"}, false},
		{doormanUser, access{"patch", "", "services", "", app, "api"}, false},
		{doormanUser, access{"create", "", "services", "", app, ""}, false},
		{doormanUser, access{"delete", "", "services", "", app, "api"}, false},
		{doormanUser, access{"update", "", "pods", "status", app, "api-1"}, false},
		{doormanUser, access{"patch", "apps", "deployments", "scale", app, "api"}, false},
		// The operator.
		{operatorUser, access{"watch", "napwake.dev", "managedworkloads", "", "", ""}, true},
		{operatorUser, access{"create", "napwake.dev", "managedworkloads", "", app, ""}, true},
		{operatorUser, access{"update", "napwake.dev", "managedworkloads", "", app, "api"}, true},
		{operatorUser, access{"update", "napwake.dev", "managedworkloads", "status", app, "api"}, true},
		{operatorUser, access{"update", "napwake.dev", "managedworkloads", "finalizers", app, "api"}, false}, // it sets no blockOwnerDeletion on anything it owns
		{operatorUser, access{"watch", "apps", "deployments", "", "", ""}, true},
		{operatorUser, access{"watch", "apps", "statefulsets", "", "", ""}, true},
		{operatorUser, access{"update", "apps", "deployments", "scale", app, "api"}, true},
		{operatorUser, access{"patch", "apps", "statefulsets", "scale", app, "db"}, true},
		{operatorUser, access{"update", "apps", "deployments", "", app, "api"}, false},
		{operatorUser, access{"create", "apps", "deployments", "", app, ""}, false}, // the NEG forwarder is off by default
		{operatorUser, access{"delete", "apps", "deployments", "", app, "api"}, false},
		{operatorUser, access{"list", "", "pods", "", "", ""}, true},
		{operatorUser, access{"delete", "", "pods", "", app, "api-0"}, false},
		{operatorUser, access{"create", "", "pods", "", app, ""}, false},
		{operatorUser, access{"watch", "", "services", "", "", ""}, true},
		{operatorUser, access{"update", "", "services", "", app, "api"}, false},
		{operatorUser, access{"watch", "networking.k8s.io", "ingresses", "", "", ""}, true},
		{operatorUser, access{"create", "discovery.k8s.io", "endpointslices", "", app, ""}, true},
		{operatorUser, access{"delete", "discovery.k8s.io", "endpointslices", "", app, "api-napwake-ipv4"}, true},
		{operatorUser, access{"create", "", "events", "", app, ""}, true},
		{operatorUser, access{"create", "events.k8s.io", "events", "", app, ""}, true},
		{operatorUser, access{"watch", "", "namespaces", "", "", ""}, true},
		{operatorUser, access{"update", "", "namespaces", "", "", app}, false},
		{operatorUser, access{"list", "metrics.k8s.io", "pods", "", app, ""}, true},
		{operatorUser, access{"update", "coordination.k8s.io", "leases", "", namespace, "napwake"}, true},
		{operatorUser, access{"create", "coordination.k8s.io", "leases", "", namespace, ""}, true},
		{operatorUser, access{"create", "coordination.k8s.io", "leases", "", app, ""}, false},
		{operatorUser, access{"list", "coordination.k8s.io", "leases", "", namespace, ""}, true},
		{operatorUser, access{"list", "coordination.k8s.io", "leases", "", "", ""}, false},
		{operatorUser, access{"delete", "coordination.k8s.io", "leases", "", namespace, "napwake-doorman-port-20000"}, true},
		{operatorUser, access{"delete", "coordination.k8s.io", "leases", "", app, "napwake-doorman-port-20000"}, false},
		{operatorUser, access{"get", "", "secrets", "", namespace, wakeKeySecret}, false},
		{operatorUser, access{"list", "", "secrets", "", "", ""}, false},
		{operatorUser, access{"list", "", "configmaps", "", "", ""}, false},
	}
	for _, tc := range cases {
		who := "doorman"
		if tc.user == operatorUser {
			who = "operator"
		}
		t.Run(fmt.Sprintf("%s may %v: %v", who, tc.a, tc.want), func(t *testing.T) {
			if got := allowed(t, tc.user, tc.a); got != tc.want {
				t.Errorf("%s may %v: %v, want %v", tc.user, tc.a, got, tc.want)
			}
		})
	}
}
