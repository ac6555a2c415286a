package memlimit

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		{"a v2 limit of 512Mi", "536870912\n", 536870912, true},
		{"v2 without a limit", "max\n", 0, false},
		{"v1 without a limit", "9223372036854771712\n", 0, false},
		{"an empty file", "", 0, false},
		{"garbage", "lots", 0, false},
		{"zero", "0", 0, false},
		{"a negative number", "-1", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Parse(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSetLeavesAnExplicitGOMEMLIMITAlone(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got := Set(); got != 0 {
		t.Fatalf("Set() = %d with GOMEMLIMIT set, want 0", got)
	}
}
