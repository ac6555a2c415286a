package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Finding is one name a package's doc comment gives that does not exist.
type Finding struct {
	Package string // import path
	Word    string
	Why     string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %q %s", f.Package, f.Word, f.Why) }

// pkg is what the check knows of one package.
type pkg struct {
	dir     string
	path    string // import path
	name    string
	doc     string
	decls   map[string]bool // top-level names
	members map[string]bool // "Type.Method" and "Type.Field"
	types   map[string]bool
	imports map[string]string // local name -> import path
}

// Check reads every package of the modules rooted at dirs and returns what
// their doc comments name that does not exist, sorted.
func Check(dirs []string) ([]Finding, error) {
	byPath := map[string]*pkg{}
	for _, d := range dirs {
		if err := loadModule(d, byPath); err != nil {
			return nil, err
		}
	}
	byName := map[string][]*pkg{}
	for _, p := range byPath {
		byName[p.name] = append(byName[p.name], p)
	}
	var out []Finding
	for _, p := range byPath {
		out = append(out, checkDoc(p, byPath, byName)...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Package != out[j].Package {
			return out[i].Package < out[j].Package
		}
		return out[i].Word < out[j].Word
	})
	return out, nil
}

func loadModule(root string, byPath map[string]*pkg) error {
	modPath, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(dir string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return nil
		}
		base := e.Name()
		if dir != root {
			if base == "testdata" || base == "vendor" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		rel, _ := filepath.Rel(root, dir)
		ip := path.Join(modPath, filepath.ToSlash(rel))
		p, err := loadPackage(dir, ip)
		if err != nil {
			return err
		}
		if p != nil {
			byPath[ip] = p
		}
		return nil
	})
}

func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}

// loadPackage parses the non-test Go files of dir; nil when there are none.
func loadPackage(dir, importPath string) (*pkg, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &pkg{dir: dir, path: importPath, decls: map[string]bool{}, members: map[string]bool{},
		types: map[string]bool{}, imports: map[string]string{}}
	fset := token.NewFileSet()
	var docs []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.name = f.Name.Name
		if f.Doc != nil {
			docs = append(docs, f.Doc.Text())
		}
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			local := path.Base(ip)
			if im.Name != nil {
				local = im.Name.Name
			}
			p.imports[local] = ip
		}
		for _, d := range f.Decls {
			p.addDecl(d)
		}
	}
	if p.name == "" {
		return nil, nil
	}
	p.doc = strings.Join(docs, "\n")
	return p, nil
}

func (p *pkg) addDecl(d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil || len(d.Recv.List) == 0 {
			p.decls[d.Name.Name] = true
			return
		}
		if t := recvType(d.Recv.List[0].Type); t != "" {
			p.members[t+"."+d.Name.Name] = true
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				p.decls[s.Name.Name] = true
				p.types[s.Name.Name] = true
				p.addMembers(s.Name.Name, s.Type)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					p.decls[n.Name] = true
				}
			}
		}
	}
}

// addMembers records a struct's fields and an interface's methods.
func (p *pkg) addMembers(typ string, t ast.Expr) {
	var fields *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			p.members[typ+"."+n.Name] = true
		}
		if len(f.Names) == 0 { // embedded: its name is a field
			if n := recvType(f.Type); n != "" {
				p.members[typ+"."+n] = true
			}
		}
	}
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}

var (
	ident     = `[A-Za-z_][A-Za-z0-9_]*`
	fileRE    = regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.go\b`)
	tickRE    = regexp.MustCompile("`([^`\n]+)`")
	exactRE   = regexp.MustCompile(`^(` + ident + `)(?:\.(` + ident + `))?(\(\))?$`)
	qualRE    = regexp.MustCompile(`(^|[^A-Za-z0-9_./-])(` + ident + `)\.(` + ident + `)\b`)
	callRE    = regexp.MustCompile(`(^|[^A-Za-z0-9_./-])(` + ident + `)\(`)
	builtins  = map[string]bool{}
	proseSkip = regexp.MustCompile("`[^`\n]*`")
)

func init() {
	for _, b := range strings.Fields(`append cap clear close complex copy delete imag len make max min new panic print println real recover
		bool byte comparable complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr any
		true false nil iota
		break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var`) {
		builtins[b] = true
	}
}

func checkDoc(p *pkg, byPath map[string]*pkg, byName map[string][]*pkg) []Finding {
	var out []Finding
	seen := map[string]bool{}
	add := func(word, why string) {
		if !seen[word] {
			seen[word] = true
			out = append(out, Finding{Package: p.path, Word: word, Why: why})
		}
	}
	for _, w := range fileRE.FindAllString(p.doc, -1) {
		if strings.Contains(w, "://") {
			continue
		}
		if !fileExists(p.dir, w) {
			add(w, "is not a file in "+p.dir)
		}
	}
	isFile := func(s string) bool { return strings.HasSuffix(s, ".go") }

	// Backticked: exactly an identifier, a qualified one, or either called.
	for _, m := range tickRE.FindAllStringSubmatch(p.doc, -1) {
		sm := exactRE.FindStringSubmatch(m[1])
		if sm == nil || isFile(m[1]) {
			continue
		}
		if sm[2] == "" {
			if !builtins[sm[1]] && !p.decls[sm[1]] && !p.members[sm[1]] {
				add(m[1], "is not declared in package "+p.name)
			}
			continue
		}
		if why := p.qualified(sm[1], sm[2], byPath, byName); why != "" {
			add(m[1], why)
		}
	}
	// Prose, backticked spans removed.
	prose := proseSkip.ReplaceAllString(p.doc, " ")
	prose = fileRE.ReplaceAllString(prose, " ")
	for _, m := range qualRE.FindAllStringSubmatchIndex(prose, -1) {
		end := m[1]
		if end < len(prose) && (prose[end] == '.' && end+1 < len(prose) && isIdentByte(prose[end+1]) || prose[end] == '/' || prose[end] == '-') {
			continue // a longer path: a.b.c, a.b/c, host.name-x
		}
		q, n := prose[m[4]:m[5]], prose[m[6]:m[7]]
		if why := p.qualified(q, n, byPath, byName); why != "" {
			add(q+"."+n, why)
		}
	}
	for _, m := range callRE.FindAllStringSubmatch(prose, -1) {
		n := m[2]
		if !builtins[n] && !p.decls[n] {
			add(n+"(", "is not a function declared in package "+p.name)
		}
	}
	return out
}

// fileExists says whether the doc's word w names a file: a bare name in
// dir; a path with a slash in dir or one of its ancestors (a path from the
// repository's root, such as doorman/main.go).
func fileExists(dir, w string) bool {
	w = filepath.FromSlash(w)
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, w)); err == nil && !st.IsDir() {
			return true
		}
		if !strings.ContainsRune(w, filepath.Separator) || filepath.Dir(d) == d {
			return false
		}
	}
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// qualified checks q.n; "" when it exists or q cannot be resolved.
func (p *pkg) qualified(q, n string, byPath map[string]*pkg, byName map[string][]*pkg) string {
	if p.types[q] {
		if p.members[q+"."+n] {
			return ""
		}
		return "names no method or field of " + q + " in package " + p.name
	}
	var cands []*pkg
	switch {
	case q == p.name:
		cands = []*pkg{p}
	case p.imports[q] != "":
		if o := byPath[p.imports[q]]; o != nil {
			cands = []*pkg{o}
		} else {
			return "" // outside the modules checked
		}
	default:
		cands = byName[q]
	}
	if len(cands) == 0 {
		return ""
	}
	for _, c := range cands {
		if c.decls[n] {
			return ""
		}
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.path
	}
	return "is not declared in " + strings.Join(names, " or ")
}
