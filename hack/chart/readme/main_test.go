package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValues(t *testing.T) {
	cases := []struct {
		name    string
		values  string
		want    []Value
		wantErr string
	}{
		{
			name: "a documented scalar gets its type, JSON default and the comment joined into one line",
			values: `# -- How long.
# In minutes.
idleAfter: 30m
`,
			want: []Value{{Key: "idleAfter", Type: "string", Default: `"30m"`, Description: "How long. In minutes."}},
		},
		{
			name: "nested keys get dotted paths and a documented parent map shows no default",
			values: `# -- The doorman.
doorman:
  # -- Pods.
  replicas: 2
  # -- On?
  enabled: true
`,
			want: []Value{
				{Key: "doorman", Type: "object", Description: "The doorman."},
				{Key: "doorman.replicas", Type: "int", Default: "2", Description: "Pods."},
				{Key: "doorman.enabled", Type: "bool", Default: "true", Description: "On?"},
			},
		},
		{
			name: "a documented map without documented keys is one value with its default",
			values: `# -- Resources.
resources:
  requests:
    cpu: 50m
`,
			want: []Value{{Key: "resources", Type: "object", Default: `{"requests":{"cpu":"50m"}}`, Description: "Resources."}},
		},
		{
			name: "only the comment block right above a key counts",
			values: `# File header.

# -- The list.
items: [a, b]
`,
			want: []Value{{Key: "items", Type: "list", Default: `["a","b"]`, Description: "The list."}},
		},
		{
			name:    "an undocumented leaf is an error naming it",
			values:  "doorman:\n  # an ordinary comment\n  replicas: 2\n",
			wantErr: "doorman.replicas",
		},
		{
			name:    "values that are not a map are an error",
			values:  "- a\n",
			wantErr: "not a map",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Values([]byte(tc.values))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("value %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestRenderEscapesTableCells(t *testing.T) {
	out, err := Render([]byte("# -- a | b\nx: \"c|d\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "| `x` | string | `\"c\\|d\"` | a \\| b |\n") {
		t.Errorf("row not escaped:\n%s", out)
	}
}

func TestTheChartsReadmeIsCurrent(t *testing.T) {
	chart := filepath.Join("..", "..", "..", "charts", "napwake")
	values, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Render(values)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != string(want) {
		t.Error("charts/napwake/README.md is out of date: run hack/chart/render.sh")
	}
}

// FuzzRender: whatever values.yaml holds, Render returns a README or an
// error; it never panics, and every row it writes is one line.
func FuzzRender(f *testing.F) {
	f.Add([]byte("# -- a\nx: 1\n"))
	f.Add([]byte("# -- m\nm:\n  # -- k\n  k: [1, {a: b}]\n"))
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"))
	f.Add([]byte("# -- multi\n# line |\ns: \"x\\ny\"\n"))
	f.Fuzz(func(t *testing.T, values []byte) {
		out, err := Render(values)
		if err != nil {
			return
		}
		for _, line := range strings.Split(strings.TrimPrefix(string(out), header), "\n") {
			if line != "" && !strings.HasPrefix(line, "| `") {
				t.Fatalf("row split across lines: %q", line)
			}
		}
	})
}
