package main

import (
	"path/filepath"
	"testing"
)

// TestCheck breaks each rule once, in its own package of the fake module,
// and keeps one package (good) that names only what exists, and some
// names the check cannot resolve and so leaves alone.
func TestCheck(t *testing.T) {
	findings, err := Check([]string{filepath.Join("testdata", "fake")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range findings {
		if _, dup := got[f.Package]; dup {
			t.Errorf("%s: more than one finding: %v", f.Package, findings)
		}
		got[f.Package] = f.Word
	}
	want := map[string]string{
		"example.com/fake/badfile":   "missing.go",
		"example.com/fake/badident":  "Missing",
		"example.com/fake/badqual":   "other.Missing",
		"example.com/fake/badmember": "T.Missing",
		"example.com/fake/badprose":  "other.Missing",
		"example.com/fake/badcall":   "Missing(",
	}
	for pkg, word := range want {
		if got[pkg] != word {
			t.Errorf("%s: got finding %q, want %q", pkg, got[pkg], word)
		}
	}
	for pkg, word := range got {
		if _, ok := want[pkg]; !ok {
			t.Errorf("%s: unexpected finding %q", pkg, word)
		}
	}
}
