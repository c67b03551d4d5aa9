package job

// The tests name IANA zones; embed the database so they do not depend on
// the machine's /usr/share/zoneinfo. This only affects the test binary.
import _ "time/tzdata"
