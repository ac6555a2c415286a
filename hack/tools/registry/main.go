// Command registry serves an in-memory OCI registry (go-containerregistry's
// reference implementation). The test bed runs it inside the node's network
// namespace so that `make demo` against "an existing cluster" (KUBECONFIG and
// NAPWAKE_REGISTRY) can be exercised here, where no real registry is reachable.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("listen", "10.200.0.1:5000", "address to serve the registry on")
	flag.Parse()
	srv := &http.Server{Addr: *addr, Handler: registry.New(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "registry: serving on http://%s (in memory)\n", *addr)
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}
