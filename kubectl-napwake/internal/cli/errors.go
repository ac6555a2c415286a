package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// userError is an error worded for the person at the terminal: one line
// saying what is wrong and what to do. main prints it as is.
type userError struct {
	msg string
	// down says the API server could not be reached at all: trying the
	// next of several workloads would only fail again.
	down bool
}

func (e *userError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error {
	return &userError{msg: oneLine(fmt.Sprintf(format, args...))}
}

// usageError is a mistake in the command line itself (an unknown flag, a
// bad flag value, flags that do not go together, a missing name): found
// before the cluster is contacted, and exit code 2, as for kubectl.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: oneLine(fmt.Sprintf(format, args...))}
}

// Exit codes of kubectl-napwake, as docs/kubectl-plugin.md lists them.
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitFailed: the cluster refused or failed it, or (several names) any
	// one of them failed.
	ExitFailed = 1
	// ExitUsage: the command line was wrong; nothing was asked of the cluster.
	ExitUsage = 2
)

// ExitCode is the process's exit code after the command returned err.
func ExitCode(err error) int {
	var u *usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &u),
		// cobra's own, untyped: a word that is no command.
		strings.HasPrefix(err.Error(), "unknown command "):
		return ExitUsage
	default:
		return ExitFailed
	}
}

// oneLine folds whitespace so an error never spans lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// explainConfig words a kubeconfig problem.
func explainConfig(err error) error {
	switch {
	case clientcmd.IsEmptyConfig(err):
		return userErrorf("no cluster configured: set KUBECONFIG or pass --kubeconfig (and --context)")
	case clientcmd.IsContextNotFound(err):
		return userErrorf("%v: list the contexts with `kubectl config get-contexts` and pass one with --context", err)
	default:
		return userErrorf("reading the kubeconfig: %v: check --kubeconfig and --context", err)
	}
}

// crdCheckTimeout bounds the one discovery request made to explain a 404.
const crdCheckTimeout = 10 * time.Second

// request is what the plugin asked the API server, for explaining its answer.
type request struct {
	// doing says it in the -ing form: "getting ManagedWorkload api".
	doing string
	// name is the ManagedWorkload asked for by name; "" for a list.
	name string
	// role is the built-in ClusterRole that grants it (roleView, roleEdit),
	// "" for a request neither grants.
	role string
	// namespace is where it was asked; "" for every namespace (-A).
	namespace string
}

// The built-in ClusterRoles the plugin's requests need in a namespace: the
// chart aggregates Napwake's roles into them (rbac.aggregateClusterRoles).
const (
	// roleView reads ManagedWorkloads (get, list, watch): status, describe,
	// forecast, and the reads of wake and pause.
	roleView = "view"
	// roleEdit also patches them: wake and pause. admin has it too.
	roleEdit = "edit"
)

// read is a request for ManagedWorkloads that view grants.
func (s *session) read(doing, name string) request {
	return request{doing: doing, name: name, role: roleView, namespace: s.namespace}
}

// explain words err, met while making req, as one line naming what to do.
func (s *session) explain(ctx context.Context, err error, req request) error {
	if err == nil {
		return nil
	}
	if why, ok := unreachable(err); ok {
		if s.cfg.Host == clientcmd.ClusterDefaults.Server {
			// client-go's fallback when it found no kubeconfig at all.
			return &userError{msg: oneLine(fmt.Sprintf("cannot reach the Kubernetes API server at %s (%s), the address used when no kubeconfig is found: set KUBECONFIG or pass --kubeconfig", s.cfg.Host, why)), down: true}
		}
		return &userError{msg: oneLine(fmt.Sprintf("cannot reach the Kubernetes API server at %s (%s): check that the cluster is up and that --context/--kubeconfig point at it", s.cfg.Host, why)), down: true}
	}
	switch {
	case apierrors.IsUnauthorized(err):
		return userErrorf("the API server at %s does not accept your credentials (401 Unauthorized): log in again or pick another --context", s.cfg.Host)
	case apierrors.IsForbidden(err):
		return forbidden(err, req)
	case apierrors.IsNotFound(err):
		if !s.crdInstalled() {
			return userErrorf("the ManagedWorkload API (%s) is not installed in the cluster at %s: install Napwake (its Helm chart installs the CRD), or pick the right --context", napwakev1alpha1.GroupVersion, s.cfg.Host)
		}
		if req.name != "" {
			return s.notFound(ctx, req.name)
		}
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		return userErrorf("%s: the API server at %s did not answer in time: try again, or raise --request-timeout", req.doing, s.cfg.Host)
	}
	return userErrorf("%s: %v", req.doing, err)
}

// forbidden words a 403: the API server's reason, then the built-in role
// that grants req where it was asked and the binding a cluster admin would
// create for it.
func forbidden(err error, req request) error {
	head := req.doing + ": not allowed: " + statusMessage(err)
	var what string
	switch req.role {
	case roleView:
		what = "reading ManagedWorkloads takes the ClusterRole view, edit or admin"
	case roleEdit:
		what = "wake and pause take the ClusterRole edit or admin"
	default:
		return userErrorf("%s: ask a cluster admin for access, or use another --context", head)
	}
	where, bind, otherwise := "in namespace "+req.namespace, "a RoleBinding (`kubectl create rolebinding <name> --clusterrole="+req.role+" --user=<you> -n "+req.namespace+"`)", "use another --context"
	if req.namespace == "" {
		where, bind, otherwise = "in every namespace for -A", "a ClusterRoleBinding (`kubectl create clusterrolebinding <name> --clusterrole="+req.role+" --user=<you>`)", "leave out -A and pass -n"
	}
	if req.role == roleEdit {
		where += " (view only reads)"
	}
	return userErrorf("%s: %s %s: ask a cluster admin for %s, or %s", head, what, where, bind, otherwise)
}

// statusMessage is the API server's own sentence, e.g. `User "alice" cannot
// list resource "managedworkloads" ... in the namespace "default"`.
func statusMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	return err.Error()
}

// notFound words a ManagedWorkload missing from the namespace asked: when the
// name exists elsewhere it names the namespace(s) to pass with -n.
func (s *session) notFound(ctx context.Context, name string) error {
	var list napwakev1alpha1.ManagedWorkloadList
	var elsewhere []string
	if err := s.c.List(ctx, &list, client.MatchingFields{"metadata.name": name}); err == nil {
		for _, mw := range list.Items {
			elsewhere = append(elsewhere, mw.Namespace)
		}
	}
	slices.Sort(elsewhere)
	switch len(elsewhere) {
	case 0:
		return userErrorf("ManagedWorkload %q not found in namespace %q: list the workloads with `kubectl napwake status -n %s`, or in every namespace with -A", name, s.namespace, s.namespace)
	case 1:
		return userErrorf("ManagedWorkload %q not found in namespace %q, but namespace %q has one: add -n %s", name, s.namespace, elsewhere[0], elsewhere[0])
	default:
		return userErrorf("ManagedWorkload %q not found in namespace %q; namespaces %s have one: pass one with -n", name, s.namespace, strings.Join(elsewhere, ", "))
	}
}

// crdInstalled asks discovery whether the API server serves
// managedworkloads.napwake.dev. Only a clear "no" counts: when discovery
// itself fails, it says yes and lets the original error speak.
func (s *session) crdInstalled() bool {
	dc, err := discovery.NewDiscoveryClientForConfig(withTimeout(s.cfg, crdCheckTimeout))
	if err != nil {
		return true
	}
	res, err := dc.ServerResourcesForGroupVersion(napwakev1alpha1.GroupVersion.String())
	if err != nil {
		return !apierrors.IsNotFound(err)
	}
	for _, r := range res.APIResources {
		if r.Name == "managedworkloads" {
			return true
		}
	}
	return false
}

// unreachable says why the API server could not be talked to at all, when
// that is what err is: refused, unknown host, timed out, TLS.
func unreachable(err error) (string, bool) {
	var dnsErr *net.DNSError
	var certErr *x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var netErr net.Error
	var opErr *net.OpError
	var urlErr *url.Error
	switch {
	case errors.As(err, &dnsErr):
		return "unknown host " + dnsErr.Name, true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.As(err, &certErr), errors.As(err, &hostErr):
		return "its TLS certificate is not trusted: " + err.Error(), true
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out", true
	case errors.As(err, &opErr):
		return opErr.Err.Error(), true
	case errors.As(err, &urlErr):
		return urlErr.Err.Error(), true
	}
	return "", false
}
