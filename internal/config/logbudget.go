package config

// Defaults of the log budget of each run's output; proc.Command's too.
const (
	DefaultOutputLinesPerSecond = 100
	DefaultOutputBytesPerSecond = 64 << 10
)

// Bounds of the log budget: high enough to log any job that is not a flood,
// low enough that the budget still protects the log.
const (
	maxOutputLinesPerSecond = 100_000
	maxOutputBytesPerSecond = 64 << 20
)

// validateLogBudget checks log.output_lines_per_second and
// log.output_bytes_per_second (0: the default).
func (d *decoder) validateLogBudget(l Log) {
	d.check(l.OutputLinesPerSecond < 0 || l.OutputLinesPerSecond > maxOutputLinesPerSecond,
		"log.output_lines_per_second", nil, "must be between 0 (the default, 100) and %d, got %d",
		maxOutputLinesPerSecond, l.OutputLinesPerSecond)
	d.check(l.OutputBytesPerSecond < 0 || l.OutputBytesPerSecond > maxOutputBytesPerSecond,
		"log.output_bytes_per_second", nil, "must be between 0 (the default, 65536) and %d, got %d",
		maxOutputBytesPerSecond, l.OutputBytesPerSecond)
}
