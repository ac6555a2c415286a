// Command pkgdoc fails when a package's doc comment names something the
// package does not have: a file (a word ending in .go) that is not in the
// package's directory, or an identifier the package (or the package it
// qualifies) does not declare.
//
//	GOWORK=off go -C hack/tools run ./pkgdoc DIR...
//
// Each DIR is a module root (a directory with a go.mod). Every package under
// it is read, except testdata, hidden directories and nested modules. The
// identifiers checked are those written as code:
//
//   - in backticks: `Name`, `pkg.Name`, `Type.Method` or `Type.Field`;
//   - in prose, a qualified name pkg.Name or Type.Method whose qualifier is
//     the package itself, a package of the given modules, or a type the
//     package declares;
//   - in prose, a call Name( or Name().
//
// A qualifier it cannot resolve (a standard or third-party package, a YAML
// path such as status.pause, a host name) is not checked: it reports only
// what it can prove wrong.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pkgdoc MODULE_DIR...")
		os.Exit(2)
	}
	findings, err := Check(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "pkgdoc:", err)
		os.Exit(2)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		fmt.Printf("pkgdoc: %d package doc comment(s) name what does not exist\n", len(findings))
		os.Exit(1)
	}
}
