// Package promquery evaluates the Prometheus activity queries of
// spec.activity.prometheus
// (docs/design/time.md#the-prometheus-activity-query) through the instant-query
// API, as Prometheus, Thanos, Mimir and VictoriaMetrics serve it: a value
// above zero is activity. Client asks, through client_golang's API client
// and, with --prometheus-http-config, prometheus/common's HTTP client
// configuration (TLS, credentials, headers, proxy); Cache keeps each
// query's answer for Reuse, timed by an injected clock. It knows queries,
// not workloads: it reads no Kubernetes object and decides nothing about a
// pause.
//
// It must not decide what an answer means for a workload (the reconciler
// does), nor send any query but the instant query.
package promquery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// Client asks a Prometheus server's instant-query API (/api/v1/query)
// through client_golang's API client, which POSTs the query as a form and
// asks again with GET when the server answers 403, 405 or 501.
type Client struct {
	// URL is the server's base URL (--prometheus-url), such as
	// http://prometheus.monitoring:9090.
	URL string
	// HTTP makes the requests; nil uses one with a Timeout and no
	// credentials. New builds it from --prometheus-http-config.
	HTTP *http.Client

	once sync.Once
	api  v1.API
	err  error
}

// Timeout bounds one query, the reading of its answer included.
const Timeout = 10 * time.Second

// maxQueryResponse bounds what is read of an answer: an activity query
// returns a number or a few series, and a query that returns a whole
// cluster's series is a mistake to report, not to buffer.
const maxQueryResponse = 1 << 20

// roundTripperName labels prometheus/common's connection tracking.
const roundTripperName = "napwake_prometheus_activity"

// New returns a Client for url whose requests go through the round
// tripper prometheus/common builds from hc: its TLS settings, credentials,
// headers and proxy. Credential files (bearer token, basic auth password)
// are read at each request and the TLS files whenever they change, so a
// rotated Secret takes effect without a restart. A nil hc is a plain
// client, as with no --prometheus-http-config.
func New(url string, hc *promconfig.HTTPClientConfig) (*Client, error) {
	if hc == nil {
		return &Client{URL: url}, nil
	}
	rt, err := promconfig.NewRoundTripperFromConfig(*hc, roundTripperName)
	if err != nil {
		return nil, fmt.Errorf("--prometheus-http-config: %w", err)
	}
	c := &http.Client{Transport: rt, Timeout: Timeout}
	if !hc.FollowRedirects {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return &Client{URL: url, HTTP: c}, nil
}

// queryAPI builds the API client once, its transport wrapped to bound the
// answer and to note the response's status for the errors.
func (p *Client) queryAPI() (v1.API, error) {
	p.once.Do(func() {
		hc := http.Client{Timeout: Timeout}
		if p.HTTP != nil {
			hc = *p.HTTP
		}
		next := hc.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		hc.Transport = &bounded{next: next}
		c, err := api.NewClient(api.Config{Address: p.URL, Client: &hc})
		if err != nil {
			p.err = fmt.Errorf("--prometheus-url %q: %w", p.URL, err)
			return
		}
		p.api = v1.NewAPI(c)
	})
	return p.api, p.err
}

// Active runs query at the server's current time.
func (p *Client) Active(ctx context.Context, query string) (bool, error) {
	q, err := p.queryAPI()
	if err != nil {
		return false, err
	}
	var status response
	v, _, _, err := q.Query(context.WithValue(ctx, responseKey{}, &status), query, time.Time{})
	if err != nil {
		return false, explain(status, err)
	}
	active, err := activeIn(v)
	if err != nil {
		return false, fmt.Errorf("the query API answered %s: %w", status.status, err)
	}
	return active, nil
}

// explain turns the API client's error into one that says what to do.
func explain(r response, err error) error {
	if errors.Is(err, errAnswerTooBig) {
		return fmt.Errorf("the query API's answer is over %d bytes: make the query return one number, such as sum(...)", maxQueryResponse)
	}
	if r.status == "" {
		return fmt.Errorf("querying Prometheus: %w", err)
	}
	var apiErr *v1.Error
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("the query API answered %s: %w", r.status, err)
	}
	switch {
	case r.code == http.StatusUnauthorized || r.code == http.StatusForbidden:
		return fmt.Errorf("the query API answered %s: check the credentials of --prometheus-http-config (Helm: operator.prometheusHTTPConfig)%s", r.status, detail(apiErr.Detail))
	case apiErr.Type == v1.ErrClient || apiErr.Type == v1.ErrServer:
		// Not the API's JSON error: a proxy's page, or a server that is
		// not Prometheus.
		return fmt.Errorf("the query API answered %s, not the query API's JSON%s", r.status, detail(apiErr.Detail))
	case apiErr.Type == v1.ErrBadResponse:
		return fmt.Errorf("the query API answered %s: not the query API's JSON: %s", r.status, apiErr.Msg)
	default:
		return fmt.Errorf("the query API answered %s: query failed (%s): %s", r.status, apiErr.Type, apiErr.Msg)
	}
}

// detail is the start of an error page, enough to tell whose it is.
func detail(body string) string {
	const most = 200
	if body == "" {
		return ""
	}
	if len(body) > most {
		body = body[:most] + "..."
	}
	return fmt.Sprintf(": %q", body)
}

// activeIn reports whether any value of an instant query's result is above
// zero. A scalar or every sample of a vector counts; NaN is not above zero,
// +Inf is. Strings, matrices and native histograms are refused: an
// activity query must return numbers.
func activeIn(v model.Value) (bool, error) {
	switch v := v.(type) {
	case *model.Scalar:
		return v.Value > 0, nil
	case model.Vector:
		active := false
		for _, s := range v {
			if s.Histogram != nil {
				return false, fmt.Errorf("series %s is a native histogram: an activity query must return numbers", s.Metric)
			}
			active = active || s.Value > 0
		}
		return active, nil
	case nil:
		return false, errors.New("the answer holds no result")
	default:
		return false, fmt.Errorf("result type %q: an activity query must return a number or an instant vector", v.Type())
	}
}

// responseKey keys the *response a query's round trips fill in.
type responseKey struct{}

// response is the last status the query's round trips saw; the API
// client's errors carry no status line.
type response struct {
	status string
	code   int
}

// errAnswerTooBig ends the reading of an answer over maxQueryResponse.
var errAnswerTooBig = errors.New("answer too big")

// bounded notes each response's status in the request's *response and
// cuts its body at maxQueryResponse: the API client reads whole bodies.
type bounded struct{ next http.RoundTripper }

func (b *bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if r, ok := req.Context().Value(responseKey{}).(*response); ok {
		r.status, r.code = resp.Status, resp.StatusCode
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxQueryResponse}
	return resp, nil
}

// CloseIdleConnections passes on to the wrapped transport.
func (b *bounded) CloseIdleConnections() {
	if c, ok := b.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// boundedBody reads at most left bytes, then fails with errAnswerTooBig
// if there is more.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - 1, errAnswerTooBig
	}
	return n, err
}
