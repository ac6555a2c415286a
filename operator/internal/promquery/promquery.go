// Package promquery evaluates the Prometheus activity queries of
// spec.activity.prometheus
// (docs/design/time.md#the-prometheus-activity-query) through the instant-query
// API, as Prometheus, Thanos, Mimir and VictoriaMetrics serve it: a value
// above zero is activity. Client asks; Cache keeps each query's answer for
// Reuse, timed by an injected clock. It knows queries, not workloads: it
// reads no Kubernetes object and decides nothing about a pause.
//
// It must not decide what an answer means for a workload (the reconciler
// does), nor send any query but the instant query.
package promquery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client asks a Prometheus server's instant-query API (GET /api/v1/query).
type Client struct {
	// URL is the server's base URL (--prometheus-url), such as
	// http://prometheus.monitoring:9090.
	URL string
	// HTTP makes the requests; nil uses one with a 10 s timeout.
	HTTP *http.Client
}

// maxQueryResponse bounds what is read of an answer: an activity query
// returns a number or a few series, and a query that returns a whole
// cluster's series is a mistake to report, not to buffer.
const maxQueryResponse = 1 << 20

var defaultQueryClient = &http.Client{Timeout: 10 * time.Second}

// Active runs query at the server's current time.
func (p *Client) Active(ctx context.Context, query string) (bool, error) {
	u, err := url.Parse(strings.TrimRight(p.URL, "/") + "/api/v1/query")
	if err != nil {
		return false, fmt.Errorf("--prometheus-url %q: %w", p.URL, err)
	}
	u.RawQuery = url.Values{"query": {query}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	c := p.HTTP
	if c == nil {
		c = defaultQueryClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, fmt.Errorf("querying Prometheus: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxQueryResponse+1))
	if err != nil {
		return false, fmt.Errorf("reading Prometheus's answer: %w", err)
	}
	if len(body) > maxQueryResponse {
		return false, fmt.Errorf("the query API's answer is over %d bytes: make the query return one number, such as sum(...)", maxQueryResponse)
	}
	active, err := Parse(body)
	if err != nil {
		return false, fmt.Errorf("the query API answered %s: %w", resp.Status, err)
	}
	return active, nil
}

// queryResponse is the instant-query API's envelope.
type queryResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// sample is a [unix time, "value"] pair.
type sample [2]json.RawMessage

// Parse reads an instant-query answer and reports whether any
// value in it is above zero. A scalar or every sample of a vector counts;
// NaN and ±Inf strings are read as Go reads them (NaN is not above zero,
// +Inf is). Strings and matrices are refused: an activity query must
// return numbers.
func Parse(body []byte) (bool, error) {
	var r queryResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return false, fmt.Errorf("not the query API's JSON: %w", err)
	}
	if r.Status != "success" {
		if r.Status == "error" {
			return false, fmt.Errorf("query failed (%s): %s", r.ErrorType, r.Error)
		}
		return false, fmt.Errorf("status %q, want success", r.Status)
	}
	var d queryData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return false, fmt.Errorf("reading data: %w", err)
	}
	switch d.ResultType {
	case "scalar":
		var s sample
		if err := json.Unmarshal(d.Result, &s); err != nil {
			return false, fmt.Errorf("reading the scalar: %w", err)
		}
		return above(s)
	case "vector":
		var series []struct {
			Value sample `json:"value"`
		}
		if err := json.Unmarshal(d.Result, &series); err != nil {
			return false, fmt.Errorf("reading the vector: %w", err)
		}
		active := false
		for _, x := range series {
			a, err := above(x.Value)
			if err != nil {
				return false, err
			}
			active = active || a
		}
		return active, nil
	default:
		return false, fmt.Errorf("result type %q: an activity query must return a number or an instant vector", d.ResultType)
	}
}

func above(s sample) (bool, error) {
	var v string
	if err := json.Unmarshal(s[1], &v); err != nil {
		return false, errors.New("a sample's value is not a string")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return false, fmt.Errorf("a sample's value %q is not a number", v)
	}
	return f > 0, nil
}
