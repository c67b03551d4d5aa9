package app

import (
	_ "embed"
	"errors"
	"regexp"
)

//go:embed PERMISSIONS.md
var permissionsDoc []byte

var confBlock = regexp.MustCompile("(?s)```conf\n(.*?)```")

// PermissionsConf returns the nats-server authorization block that
// PERMISSIONS.md documents (users "admin" and "cronlock", passwords
// ADMIN_PASSWORD and CRONLOCK_PASSWORD as placeholders). The tests run
// cronlock against exactly this block, so the document cannot drift from
// what the code needs.
func PermissionsConf() (string, error) {
	m := confBlock.FindSubmatch(permissionsDoc)
	if m == nil {
		return "", errors.New("PERMISSIONS.md: no ```conf block")
	}
	return string(m[1]), nil
}
