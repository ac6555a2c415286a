package soak

import (
	"maps"
	"testing"
)

const exposition = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 42
process_open_fds 17
process_resident_memory_bytes 3.3554432e+07
napwake_doorman_table_entries{table="listeners"} 12
napwake_doorman_table_entries{table="odd } name"} 1 1700000000000
napwake_operator_route_moves_total{result="moved"} 3
napwake_operator_route_moves_total{result="failed"} 1
go_gc_duration_seconds{quantile="0.5"} 0.001
broken{table="x" 5
novalue
`

func TestParseMetrics(t *testing.T) {
	tests := []struct {
		name   string
		wanted []string
		want   Values
	}{
		{"reads plain gauges in exponent form", []string{Goroutines, FDs, RSS},
			Values{Goroutines: 42, FDs: 17, RSS: 32 << 20}},
		{"keys labelled series by name and labels, a quoted brace included, and skips the timestamp", []string{TableEntries},
			Values{`napwake_doorman_table_entries{table="listeners"}`: 12, `napwake_doorman_table_entries{table="odd } name"}`: 1}},
		{"leaves out names not asked for and lines it cannot read", []string{"broken", "novalue"}, Values{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseMetrics(exposition, tt.wanted...); !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSumAddsEveryLabelledSeriesOfAName(t *testing.T) {
	if got := ParseMetrics(exposition, RouteMoves).Sum(RouteMoves); got != 4 {
		t.Fatalf("sum %v, want 4", got)
	}
}

func TestMedianTakesTheMiddleSampleAndDropsSeriesMissingFromOne(t *testing.T) {
	got := Median([]Values{{RSS: 30, FDs: 9}, {RSS: 10, FDs: 9}, {RSS: 20}})
	if want := (Values{RSS: 20}); !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := Median([]Values{{Goroutines: 4}, {Goroutines: 2}}); got[Goroutines] != 2 {
		t.Fatalf("even count: %v, want the lower middle 2", got)
	}
}

// FuzzParseMetrics: whatever a scrape returns, ParseMetrics must never
// panic, and every value it returns must belong to a name asked for.
func FuzzParseMetrics(f *testing.F) {
	f.Add(exposition)
	f.Add("go_goroutines{a=\"\\\"}\"} 1\n")
	f.Add("{} 1\ngo_goroutines")
	f.Fuzz(func(t *testing.T, text string) {
		for k := range ParseMetrics(text, Goroutines, TableEntries) {
			name, _, _ := cutName(k)
			if name != Goroutines && name != TableEntries {
				t.Fatalf("series %q not asked for", k)
			}
		}
	})
}

func cutName(k string) (string, string, bool) {
	for i := 0; i < len(k); i++ {
		if k[i] == '{' {
			return k[:i], k[i:], true
		}
	}
	return k, "", false
}
