package soak

import "testing"

func TestJudge(t *testing.T) {
	base := Values{RSS: 100 << 20, Goroutines: 50, FDs: 20, "t": 12}
	tests := []struct {
		name  string
		end   Values
		tabs  []string
		wantN int // findings
		pass  bool
	}{
		{"passes a process back where it started", Values{RSS: 100 << 20, Goroutines: 50, FDs: 20, "t": 12}, []string{"t"}, 4, true},
		{"passes RSS grown by just under 10 % and counts within their slack", Values{RSS: 109.9 * (1 << 20), Goroutines: 55, FDs: 23, "t": 11}, []string{"t"}, 4, true},
		{"misses RSS grown by more than 10 %", Values{RSS: 110.1 * (1 << 20), Goroutines: 50, FDs: 20}, nil, 3, false},
		{"misses six goroutines more than baseline", Values{RSS: 100 << 20, Goroutines: 56, FDs: 20}, nil, 3, false},
		{"misses four descriptors more than baseline", Values{RSS: 100 << 20, Goroutines: 50, FDs: 24}, nil, 3, false},
		{"misses a table one entry larger than baseline", Values{RSS: 100 << 20, Goroutines: 50, FDs: 20, "t": 13}, []string{"t"}, 4, false},
		{"misses a series missing at the end", Values{RSS: 100 << 20, FDs: 20}, nil, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := Judge(DefaultBounds, []Process{{Name: "p", Baseline: base, End: tt.end, Tables: tt.tabs}})
			if len(fs) != tt.wantN || Passed(fs) != tt.pass {
				t.Fatalf("findings %v: passed %v, want %d findings passing %v", fs, Passed(fs), tt.wantN, tt.pass)
			}
		})
	}
}

func TestPassedIsFalseWithNothingJudged(t *testing.T) {
	if Passed(nil) {
		t.Fatal("no findings passed")
	}
}
