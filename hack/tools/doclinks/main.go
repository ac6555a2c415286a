// Command doclinks fails when a Markdown page of the repository links to a
// file that does not exist, or to a heading (#anchor) the page it names
// does not have, as GitHub renders anchors. Links out of the repository
// (http:, https:, mailto:) are not followed.
//
// Usage: doclinks ROOT
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// link matches an inline Markdown link or image: [text](target) with an
// optional "title".
var link = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// skipDirs are never read: build output, dependencies and fixtures.
var skipDirs = map[string]bool{".git": true, "_out": true, "dist": true, "bin": true, "node_modules": true, "testdata": true, "vendor": true}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: doclinks ROOT")
		os.Exit(2)
	}
	problems, err := check(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "doclinks:", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("%d broken links in the docs: fix the link or the heading it names\n", len(problems))
		os.Exit(1)
	}
}

// check reads every .md file under root and returns one line per broken
// link, as "file:line: why", in file order.
func check(root string) ([]string, error) {
	var pages []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (skipDirs[d.Name()] || (p != root && strings.HasPrefix(d.Name(), "."))) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(pages)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		b, err := os.ReadFile(page)
		if err != nil {
			return nil, err
		}
		a := headings(b)
		anchors[page] = a
		return a, nil
	}
	var problems []string
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, page)
		for i, line := range outsideCode(b) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(dest); err != nil {
						problems = append(problems, fmt.Sprintf("%s:%d: %s: no such file", rel, i+1, target))
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				a, err := anchorsOf(dest)
				if err != nil {
					return nil, err
				}
				if !a[anchor] {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: no heading with that anchor", rel, i+1, target))
				}
			}
		}
	}
	return problems, nil
}

// outsideCode returns the page's lines with those inside fenced code blocks
// blanked, so line numbers stay right and code is not read as links.
func outsideCode(b []byte) []string {
	var lines []string
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines = append(lines, "")
			continue
		}
		if fenced {
			l = ""
		}
		lines = append(lines, stripInlineCode(l))
	}
	return lines
}

// stripInlineCode removes `code spans`, where brackets are not links.
func stripInlineCode(l string) string {
	var out strings.Builder
	in := false
	for _, r := range l {
		if r == '`' {
			in = !in
			continue
		}
		if !in {
			out.WriteRune(r)
		}
	}
	return out.String()
}

// headings returns the anchors GitHub gives a page's headings: lower case,
// punctuation but - and _ dropped, spaces as -, and -1, -2 … for repeats.
func headings(b []byte) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range outsideCodeRaw(b) {
		t := strings.TrimLeft(l, "#")
		if t == l || (t != "" && t[0] != ' ') {
			continue
		}
		slug := slugify(strings.TrimSpace(t))
		n := seen[slug]
		seen[slug] = n + 1
		if n > 0 {
			slug = fmt.Sprintf("%s-%d", slug, n)
		}
		out[slug] = true
	}
	return out
}

// outsideCodeRaw is outsideCode without stripping inline code, for headings.
func outsideCodeRaw(b []byte) []string {
	var lines []string
	fenced := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, l)
		}
	}
	return lines
}

func slugify(h string) string {
	var out strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			out.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			out.WriteRune(r)
		}
	}
	return out.String()
}
