package promquery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func vector(values ...string) string {
	var parts []string
	for _, v := range values {
		parts = append(parts, `{"metric":{"queue":"jobs"},"value":[1764489600.123,"`+v+`"]}`)
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(parts, ",") + `]}}`
}

// answerWith is a Client whose every request is answered with status and
// body, in memory: for what is read of an answer, not how it is asked.
func answerWith(status int, body string) *Client {
	return &Client{URL: "http://prometheus.test", HTTP: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r,
		}, nil
	})}}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// What an answer says, as client_golang decodes it and activeIn reads it.
func TestAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       bool
		err        string // a part of the error; "" for none
	}{
		{"a scalar above zero", `{"status":"success","data":{"resultType":"scalar","result":[1764489600,"1"]}}`, true, ""},
		{"a scalar of zero", `{"status":"success","data":{"resultType":"scalar","result":[1764489600,"0"]}}`, false, ""},
		{"one series above zero among zeros", vector("0", "3", "0"), true, ""},
		{"every series zero", vector("0", "0"), false, ""},
		{"a negative value", vector("-2"), false, ""},
		{"no series: nothing to do", vector(), false, ""},
		{"NaN is not above zero", vector("NaN"), false, ""},
		{"+Inf is", vector("+Inf"), true, ""},
		{"a fraction", vector("0.001"), true, ""},
		{"the query failed", `{"status":"error","errorType":"bad_data","error":"parse error: unexpected <EOF>"}`, false, "parse error: unexpected <EOF>"},
		{"a range query's matrix", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, false, `"matrix"`},
		{"a string result", `{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`, false, `"string"`},
		{"a native histogram", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"h"},"histogram":[1,{"count":"1","sum":"1","buckets":[]}]}]}}`, false, "native histogram"},
		{"a value that is not a number", vector("many"), false, `"many"`},
		{"a value that is not a string", `{"status":"success","data":{"resultType":"vector","result":[{"value":[1,2]}]}}`, false, "quoted string"},
		{"an HTML page", `<html><body>502 Bad Gateway</body></html>`, false, "not the query API's JSON"},
		{"an unknown status without data", `{"status":"partial"}`, false, "no result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := answerWith(http.StatusOK, tc.body).Active(context.Background(), "up")
			if tc.err == "" && err != nil {
				t.Fatalf("error %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want one with %s", err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("active %v, want %v", got, tc.want)
			}
		})
	}
}

// The body bound cuts at maxQueryResponse and not a byte before.
func TestBoundedBody(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		err  error
	}{
		{"empty", 0, nil},
		{"at the bound", maxQueryResponse, nil},
		{"a byte over", maxQueryResponse + 1, errAnswerTooBig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &boundedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("x", tc.size))), left: maxQueryResponse}
			got, err := io.ReadAll(b)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if want := min(tc.size, maxQueryResponse); len(got) != want {
				t.Fatalf("read %d bytes, want %d", len(got), want)
			}
		})
	}
}

// The client asks the instant-query API under the base URL, with the query
// POSTed as a form (client_golang's way; it asks again with GET on a 403,
// 405 or 501), over a real socket.
func TestClientAsksTheInstantQueryAPI(t *testing.T) {
	const query = `sum(rabbitmq_queue_messages{queue="jobs"}) > 0 or vector(0)`
	answer := vector("7")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/prom/api/v1/query" || r.FormValue("query") != query {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	}))
	defer srv.Close()
	c := &Client{URL: srv.URL + "/prom/"}
	active, err := c.Active(context.Background(), query)
	if err != nil || !active {
		t.Fatalf("Active = %v, %v; want true", active, err)
	}
	answer = vector("0")
	if active, err := c.Active(context.Background(), query); err != nil || active {
		t.Fatalf("Active = %v, %v; want false", active, err)
	}
}

func TestClientReportsWhatWentWrong(t *testing.T) {
	big := `{"status":"success","data":{"resultType":"vector","result":[` + strings.Repeat(`{"value":[1,"0"]},`, 1<<16) + `{"value":[1,"0"]}]}}`
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"a bad query", http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"1:5: parse error"}`, "400 Bad Request: query failed (bad_data): 1:5: parse error"},
		{"a server that is not Prometheus", http.StatusNotFound, "404 page not found", `404 Not Found, not the query API's JSON: "404 page not found"`},
		{"a missing credential", http.StatusUnauthorized, "no org id", "401 Unauthorized: check the credentials of --prometheus-http-config"},
		{"a proxy's error page", http.StatusBadGateway, "<html>bad gateway</html>", "502 Bad Gateway, not the query API's JSON"},
		{"an answer over 1 MiB", http.StatusOK, big, "over 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			active, err := (&Client{URL: srv.URL}).Active(context.Background(), "up")
			if active || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Active = %v, %v; want false and an error with %q", active, err, tc.want)
			}
		})
	}
}

// A server that does not answer is given up on at the client's timeout.
func TestClientGivesUpOnASilentServer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := &Client{URL: srv.URL, HTTP: &http.Client{Timeout: 200 * time.Millisecond}}
	start := time.Now()
	active, err := c.Active(context.Background(), "up")
	if active || err == nil {
		t.Fatalf("Active = %v, %v; want false and an error", active, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("gave up after %v, want about the 200ms timeout", took)
	}
}

func TestABadURLIsReported(t *testing.T) {
	_, err := (&Client{URL: "http://bad host:9090"}).Active(context.Background(), "up")
	if err == nil || !strings.Contains(err.Error(), "--prometheus-url") {
		t.Fatalf("error %v, want one naming --prometheus-url", err)
	}
}

// Whatever a server answers, reading it never panics, and activity comes
// only with no error. Its corpus began as FuzzParse's, when the package
// parsed the JSON itself.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		vector("1"), vector("0", "2"), vector(), vector("NaN"),
		`{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"value":[1]}]}}`,
		`{"status":"success","data":null}`, `null`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		active, err := answerWith(http.StatusOK, string(body)).Active(context.Background(), "up")
		if err != nil && active {
			t.Fatalf("active with an error: %v", err)
		}
	})
}
