package config

import "testing"

func TestLogBudgetKeys(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("c.yaml", []byte("log:\n  output_lines_per_second: 500\n  output_bytes_per_second: 1048576\n"+job0))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.OutputLinesPerSecond != 500 || cfg.Log.OutputBytesPerSecond != 1<<20 {
		t.Errorf("log = %+v, want 500 lines and 1048576 bytes a second", cfg.Log)
	}
	for name, tt := range map[string]struct {
		src  string
		want []want
	}{
		"negative lines": {"log:\n  output_lines_per_second: -1\n" + job0,
			[]want{{"2: log.output_lines_per_second", "must be between 0 (the default, 100) and 100000, got -1"}}},
		"too many bytes": {"log:\n  level: info\n  output_bytes_per_second: 1000000000\n" + job0,
			[]want{{"3: log.output_bytes_per_second", "must be between 0 (the default, 65536) and 67108864, got 1000000000"}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("bad.yaml", []byte(tt.src))
			checkErrors(t, err, tt.want)
		})
	}
}
