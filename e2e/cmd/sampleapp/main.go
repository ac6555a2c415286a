// Command sampleapp is the workload the end-to-end suite and the demo pause
// and wake: a small HTTP server whose readiness passes only after a startup
// delay, as a real app's would, and which can also greet first on a raw TCP
// port like MySQL does, for the server-speaks-first scenario. It can also act
// as a client (`sampleapp get URL`), since its image has no shell or curl,
// and as a stand-in Prometheus (`--stand-in-prometheus`) whose every instant
// query answers one value the suite sets, for the activity-query scenario.
// With --upstream it is one tier of an environment: each request to / calls
// the upstream URL (another sample app's Service) and answers with its own
// line followed by the upstream's answer, so a front end's answer shows the
// whole chain, for the dependencies scenario. With --shutdown-delay it goes
// on serving for a while after SIGTERM (readiness failing), as the spec
// advises apps behind a pause; /stream?for=D answers a line every 100 ms
// for D, a long-lived connection.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "get" {
		os.Exit(get(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "load" {
		os.Exit(load(os.Args[2:]))
	}
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, "sampleapp:", err)
		os.Exit(1)
	}
}

func serve() error {
	addr := flag.String("listen", ":8080", "HTTP address")
	greet := flag.String("greet-listen", "", "if set, a raw TCP address that greets each connection first")
	startup := flag.Duration("startup-delay", time.Second, "time before /ready passes, as a real app's start-up")
	message := flag.String("message", "hello from the sample app", "what / answers")
	upstream := flag.String("upstream", "", "if set, a URL each request to / calls first, its answer appended to this one's; $VAR and ${VAR} are read from the environment at each request (a Service's <NAME>_SERVICE_HOST)")
	upstreamTimeout := flag.Duration("upstream-timeout", 3*time.Minute, "give up on the upstream after this long (the doorman may hold the call while it wakes)")
	promStandIn := flag.Bool("stand-in-prometheus", false, "also answer Prometheus instant queries (/api/v1/query) with the value /set-activity?value=N sets (0 at start)")
	var promRequire headerList
	flag.Var(&promRequire, "prometheus-require-header", "NAME=VALUE a query must carry, or the stand-in Prometheus answers 401 (repeatable): a tenant header, an Authorization")
	shutdownDelay := flag.Duration("shutdown-delay", 0, "after SIGTERM, fail readiness but go on serving this long before shutting down")
	flag.Parse()

	var ready, stopping atomic.Bool
	started := time.Now()
	time.AfterFunc(*startup, func() { ready.Store(true) })
	host, _ := os.Hostname()

	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() || stopping.Load() {
			http.Error(w, "starting or stopping", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Sampleapp-Pod", host)
		own := fmt.Sprintf("%s (pod %s, up %s)\n", *message, host, time.Since(started).Round(time.Millisecond))
		if *upstream == "" {
			fmt.Fprint(w, own)
			return
		}
		body, err := callUpstream(r.Context(), os.ExpandEnv(*upstream), *upstreamTimeout)
		if err != nil {
			http.Error(w, own+"upstream: "+err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprint(w, own+"> "+body)
	})
	mux.HandleFunc("/stream", stream)
	if *promStandIn {
		standInPrometheus(mux, promRequire)
	}
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if *greet != "" {
		ln, err := net.Listen("tcp", *greet)
		if err != nil {
			return err
		}
		go greetLoop(ln, host)
		defer ln.Close()
	}
	go func() {
		<-ctx.Done()
		stopping.Store(true)
		time.Sleep(*shutdownDelay) // serving on, as an app that drains after SIGTERM
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// stream answers a line every 100 ms for ?for= (default 10 s), flushing
// each, then ends the body with "done".
func stream(w http.ResponseWriter, r *http.Request) {
	d, err := time.ParseDuration(r.URL.Query().Get("for"))
	if err != nil {
		d = 10 * time.Second
	}
	f, _ := w.(http.Flusher)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		fmt.Fprintln(w, "tick")
		if f != nil {
			f.Flush()
		}
	}
	fmt.Fprintln(w, "done")
}

// callUpstream GETs url and returns its body, failing on a status other
// than 200.
func callUpstream(ctx context.Context, url string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("calling %s: %w", url, err)
	}
	req.Header.Set("User-Agent", "sampleapp-upstream/1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("calling %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// standInPrometheus answers every instant query (/api/v1/query, by GET or
// by a POSTed form as the operator's client_golang client sends it, as
// Prometheus's HTTP API does) with a one-sample vector holding the value
// last set with /set-activity?value=N, and logs each query it was asked.
// A query missing any of require's headers (or with another value) is
// answered 401, as a Prometheus behind an authenticating proxy answers.
func standInPrometheus(mux *http.ServeMux, require headerList) {
	var value atomic.Value
	value.Store("0")
	mux.HandleFunc("/set-activity", func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query().Get("value")
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			http.Error(w, "value: want a number", http.StatusBadRequest)
			return
		}
		value.Store(v)
		fmt.Fprintf(w, "activity %s\n", v)
	})
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		for _, h := range require {
			if r.Header.Get(h.name) != h.value {
				fmt.Fprintf(os.Stderr, "query refused: header %s is %q\n", h.name, r.Header.Get(h.name))
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"status":"error","errorType":"unauthorized","error":"missing or wrong %s"}`, h.name)
				return
			}
		}
		v := value.Load().(string)
		fmt.Fprintf(os.Stderr, "query %q: %s\n", r.FormValue("query"), v)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,%q]}]}}`, time.Now().Unix(), v)
	})
}

// headerList is a repeatable NAME=VALUE flag.
type headerList []struct{ name, value string }

func (l *headerList) String() string { return fmt.Sprint(*l) }

func (l *headerList) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=VALUE", v)
	}
	*l = append(*l, struct{ name, value string }{name, value})
	return nil
}

// greetLoop speaks first on each connection, like MySQL's handshake, then
// echoes what the client sends.
func greetLoop(ln net.Listener, host string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			fmt.Fprintf(c, "GREETING from %s\n", host)
			_, _ = io.Copy(c, c)
		}()
	}
}

// get is a tiny curl: prints the status line, headers and body of one GET.
// load sends GET URL every --every for --for, as a user's steady use of a
// workload, and prints how many answers came back.
func load(args []string) int {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	every := fs.Duration("every", 10*time.Millisecond, "time between requests")
	length := fs.Duration("for", time.Minute, "how long to go on")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: sampleapp load [--every D] [--for D] URL")
		return 2
	}
	client := &http.Client{Timeout: 10 * time.Second}
	ok, failed := 0, 0
	t := time.NewTicker(*every)
	defer t.Stop()
	for end := time.Now().Add(*length); time.Now().Before(end); <-t.C {
		resp, err := client.Get(fs.Arg(0))
		if err != nil {
			failed++
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		ok++
	}
	fmt.Printf("%d answered, %d failed\n", ok, failed)
	return 0
}

func get(args []string) int {
	fs := flag.NewFlagSet("get", flag.ExitOnError)
	ua := fs.String("user-agent", "sampleapp-client/1", "User-Agent to send")
	timeout := fs.Duration("timeout", 3*time.Minute, "give up after this long")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: sampleapp get [--user-agent UA] URL")
		return 2
	}
	req, err := http.NewRequest(http.MethodGet, fs.Arg(0), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	req.Header.Set("User-Agent", *ua)
	start := time.Now()
	resp, err := (&http.Client{Timeout: *timeout}).Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%s %s in %s\n%s", resp.Proto, resp.Status, time.Since(start).Round(time.Millisecond), body)
	return 0
}
