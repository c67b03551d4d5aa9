package job

import (
	"fmt"
	"time"
)

// Date is a calendar date without a zone, such as an entry of
// Calendar.ExcludeDates: it names a day of the wall clock of whatever location
// it is read in.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// dateLayout is the only accepted form of a Date: YYYY-MM-DD.
const dateLayout = "2006-01-02"

// ParseDate parses "YYYY-MM-DD" (e.g. "2026-12-25"). It refuses dates that
// do not exist ("2026-02-30") and any other form.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(dateLayout, s)
	if err != nil || len(s) != len(dateLayout) {
		return Date{}, fmt.Errorf("date %s: want an existing date as YYYY-MM-DD, e.g. \"2026-12-25\"", quote(s))
	}
	return Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}, nil
}

// String returns the date as YYYY-MM-DD.
func (d Date) String() string {
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
}

// Valid reports whether d is an existing date of the years 1 to 9999.
func (d Date) Valid() bool {
	if d.Year < 1 || d.Year > 9999 || d.Month < time.January || d.Month > time.December || d.Day < 1 {
		return false
	}
	return int64(d.Day) <= daysIn(int64(d.Year), int64(d.Month))
}

// days returns the day number of d (days since 1970-01-01).
func (d Date) days() int64 {
	return daysFromCivil(int64(d.Year), int64(d.Month), int64(d.Day))
}
