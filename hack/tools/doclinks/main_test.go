package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestBrokenLinksAreNamedWithTheirLine: a missing file and a missing heading
// are each reported with the page and line; a good file link, a good anchor
// (GitHub's slug, repeats numbered), links in code and links out of the
// repository are not.
func TestBrokenLinksAreNamedWithTheirLine(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/b.md", "# B\n\n## Who may do what?\n\n## Notes\n\n## Notes\n")
	write("README.md", "See [b](docs/b.md), [who](docs/b.md#who-may-do-what) and [second](docs/b.md#notes-1).\n"+
		"[gone](docs/c.md) and [bad](docs/b.md#nowhere)\n"+
		"```\n[in code](nowhere.md)\n```\n"+
		"`[inline](nowhere.md)` [out](https://example.com/x.md) [self](#readme-top)\n")
	got, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:2: docs/c.md: no such file",
		"README.md:2: docs/b.md#nowhere: no heading with that anchor",
		"README.md:6: #readme-top: no heading with that anchor",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("check = %q\nwant %q", got, want)
	}
}
