package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTheTableNamesStepsAndTheSlowestInOrder(t *testing.T) {
	steps := write(t, "steps.tsv", "verify\t75\tok\ntest-unit\t250\tFAILED\ntotal\t325\tFAILED\n")
	unit := write(t, "unit.json", strings.Join([]string{
		`{"Action":"pass","Package":"p","Test":"TestFast","Elapsed":0.2}`,
		`{"Action":"pass","Package":"p","Test":"TestSlow","Elapsed":61}`,
		`{"Action":"pass","Package":"p","Test":"TestSlow/sub","Elapsed":90}`,
		`{"Action":"fail","Package":"q","Test":"TestMid","Elapsed":3}`,
		`{"Action":"pass","Package":"q","Test":"TestMid","Elapsed":2}`,
		`{"Action":"output","Package":"q","Test":"TestOut","Elapsed":500}`,
	}, "\n"))
	e2e := write(t, "report.json", `[{"SpecReports":[
		{"ContainerHierarchyTexts":["Napwake"],"LeafNodeText":"pauses","LeafNodeType":"It","State":"passed","RunTime":30000000000,"NumAttempts":1},
		{"ContainerHierarchyTexts":["Napwake"],"LeafNodeText":"wakes","LeafNodeType":"It","State":"passed","RunTime":90000000000,"NumAttempts":2},
		{"ContainerHierarchyTexts":["Napwake"],"LeafNodeText":"unfocused","LeafNodeType":"It","State":"skipped","RunTime":120000000000,"NumAttempts":0},
		{"LeafNodeText":"","LeafNodeType":"BeforeSuite","State":"passed","RunTime":99000000000000}]}]`)
	var b strings.Builder
	if err := run(&b, steps, unit, e2e, 2); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"     1m15s  verify\n", "     4m10s  test-unit  (FAILED)\n", "     5m25s  total  (FAILED)\n",
		"slowest unit and envtest tests\n      1m01s  p.TestSlow\n       2.0s  q.TestMid\n\n",
		"slowest end-to-end specs\n      1m30s  Napwake wakes  (2 attempts)\n      30.0s  Napwake pauses\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "sub") || strings.Contains(got, "TestOut") || strings.Contains(got, "TestFast") || strings.Contains(got, "BeforeSuite") || strings.Contains(got, "unfocused") {
		t.Errorf("the table lists a subtest, an output line, a test past n, a suite node or a spec not run:\n%s", got)
	}
}

func TestAMissingFileIsLeftOut(t *testing.T) {
	var b strings.Builder
	if err := run(&b, filepath.Join(t.TempDir(), "none.tsv"), "", "", 10); err != nil {
		t.Fatalf("a missing file is an error: %v", err)
	}
	if strings.Contains(b.String(), "steps") {
		t.Errorf("a missing file got a section:\n%s", b.String())
	}
}

func TestABadLineIsAnError(t *testing.T) {
	if err := run(&strings.Builder{}, write(t, "s.tsv", "verify\tsoon\tok\n"), "", "", 10); err == nil || !strings.Contains(err.Error(), `"soon"`) {
		t.Errorf("a step with no seconds: %v", err)
	}
}
