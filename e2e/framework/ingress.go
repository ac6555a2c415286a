package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Ingress is the test bed's ingress controller (Traefik) as a client
// outside the cluster reaches it: its plain and TLS entrypoints, the CA that
// signed its certificate, and its API (which says what it routes to).
type Ingress struct {
	HTTP, HTTPS, API string
	RootCAs          *x509.CertPool
	// AccessLog is Traefik's access log: one JSON object a request, with
	// the request's Sec-Fetch-Site and Sec-Fetch-User headers kept.
	AccessLog string
}

// IngressClassName is the IngressClass the test bed's Traefik serves.
const IngressClassName = "traefik"

// IngressFromEnv reads what hack/e2e.sh exports about the test bed's ingress
// controller: NAPWAKE_E2E_INGRESS_HTTP, _HTTPS, _API and _CA.
func IngressFromEnv() (Ingress, error) {
	in := Ingress{
		HTTP: os.Getenv("NAPWAKE_E2E_INGRESS_HTTP"), HTTPS: os.Getenv("NAPWAKE_E2E_INGRESS_HTTPS"),
		API: os.Getenv("NAPWAKE_E2E_INGRESS_API"), AccessLog: os.Getenv("NAPWAKE_E2E_INGRESS_ACCESS_LOG"),
	}
	ca := os.Getenv("NAPWAKE_E2E_INGRESS_CA")
	if in.HTTP == "" || in.HTTPS == "" || in.API == "" || ca == "" || in.AccessLog == "" {
		return in, fmt.Errorf("NAPWAKE_E2E_INGRESS_HTTP, _HTTPS, _API, _CA and _ACCESS_LOG must be set: run the suite through hack/e2e.sh (make e2e)")
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		return in, fmt.Errorf("reading the ingress CA: %w", err)
	}
	in.RootCAs = x509.NewCertPool()
	if !in.RootCAs.AppendCertsFromPEM(pem) {
		return in, fmt.Errorf("no certificate in %s", ca)
	}
	return in, nil
}

// Get sends one GET through the ingress controller for host (the Host
// header, and the TLS server name over https), verifying its certificate
// against the test bed's CA.
func (in Ingress) Get(ctx context.Context, https bool, host, path string, header map[string]string, timeout time.Duration) (Response, error) {
	base := in.HTTP
	if https {
		base = in.HTTPS
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return Response{}, err
	}
	req.Host = host
	for k, v := range header {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil,
		TLSClientConfig: &tls.Config{RootCAs: in.RootCAs, ServerName: host, MinVersion: tls.VersionTLS12}}
	return do(req, tr, timeout)
}

// Host is the address both entrypoints listen on, for a client that must
// be told where a name under napwake.test is (a browser's resolver rules).
func (in Ingress) Host() string {
	u, err := url.Parse(in.HTTPS)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// AccessEntry is one request in Traefik's access log: what the suite
// asserts reached the ingress controller.
type AccessEntry struct {
	Method       string `json:"RequestMethod"`
	Host         string `json:"RequestHost"`
	Path         string `json:"RequestPath"`
	Status       int    `json:"DownstreamStatus"`
	TLS          string `json:"TLSVersion"`
	SecFetchSite string `json:"request_Sec-Fetch-Site"`
	SecFetchUser string `json:"request_Sec-Fetch-User"`
}

// Requests returns the access log's entries for host, oldest first.
func (in Ingress) Requests(host string) ([]AccessEntry, error) {
	raw, err := os.ReadFile(in.AccessLog)
	if err != nil {
		return nil, fmt.Errorf("reading Traefik's access log: %w", err)
	}
	var out []AccessEntry
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var e AccessEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("decoding Traefik's access log line %q: %w", line, err)
		}
		if e.Host == host {
			out = append(out, e)
		}
	}
	return out, nil
}

// ServerAddresses returns the host:port of every server the ingress
// controller balances the Service's port across (Traefik's API names the
// service <namespace>-<service>-<port>@kubernetes).
func (in Ingress) ServerAddresses(ctx context.Context, ns, service string, port int32) ([]string, error) {
	name := fmt.Sprintf("%s-%s-%d@kubernetes", ns, service, port)
	resp, err := HTTPGet(ctx, in.API+"/api/http/services/"+name, nil, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, fmt.Errorf("traefik's API on service %s: %d %s", name, resp.Status, resp.Body)
	}
	var svc struct {
		LoadBalancer struct {
			Servers []struct {
				URL string `json:"url"`
			} `json:"servers"`
		} `json:"loadBalancer"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &svc); err != nil {
		return nil, fmt.Errorf("decoding Traefik's service %s: %w", name, err)
	}
	var out []string
	for _, s := range svc.LoadBalancer.Servers {
		out = append(out, strings.TrimPrefix(s.URL, "http://"))
	}
	return out, nil
}

// IngressFor renders an Ingress of the test bed's class sending every path
// of host to the app's Service port 80 (named http).
func IngressFor(a SampleApp, host string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(IngressClassName),
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: a.Name, Port: networkingv1.ServiceBackendPort{Number: 80},
						}},
					}},
				}},
			}},
		},
	}
}

// PodMetrics returns the metrics API's usage of each container of a pod
// (metrics.k8s.io/v1beta1, served by metrics-server), read raw so the suite
// needs no metrics client.
func (f *Framework) PodMetrics(ctx context.Context, ns, pod string) (map[string]corev1.ResourceList, error) {
	raw, err := f.Clientset.CoreV1().RESTClient().Get().
		AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", ns, "pods", pod).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading pod metrics of %s/%s: %w", ns, pod, err)
	}
	var m struct {
		Containers []struct {
			Name  string              `json:"name"`
			Usage corev1.ResourceList `json:"usage"`
		} `json:"containers"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decoding pod metrics of %s/%s: %w", ns, pod, err)
	}
	out := map[string]corev1.ResourceList{}
	for _, c := range m.Containers {
		out[c.Name] = c.Usage
	}
	return out, nil
}
