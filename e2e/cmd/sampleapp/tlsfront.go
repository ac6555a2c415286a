package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// tlsFront ends TLS and passes each request on to upstream over plain
// HTTP/1.1, Host header unchanged, as an ingress controller in front of a
// workload does: the end-to-end suite puts it before a paused workload
// that asks, so a browser reaches the doorman from a secure origin and
// sends fetch metadata (Sec-Fetch-*), which it never sends over plain HTTP.
// The certificate and key are files (a Secret the suite makes).
func tlsFront(listen, upstream, certFile, keyFile string) error {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--tls-front %q: want http://host:port", upstream)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			r := pr.In
			// Logged so the suite can see the browser sent fetch metadata.
			fmt.Fprintf(os.Stderr, "%s %s sec-fetch-site=%q sec-fetch-user=%q origin=%q\n",
				r.Method, r.URL.Path, r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-User"), r.Header.Get("Origin"))
			pr.SetURL(u)
			pr.Out.Host = r.Host // the Host header stays the browser's
		},
		// The doorman closes every answer; a pod keeps its connection.
		Transport: &http.Transport{ResponseHeaderTimeout: 3 * time.Minute, MaxIdleConnsPerHost: 4},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ready") })
	mux.Handle("/", proxy)
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServeTLS(certFile, keyFile); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
