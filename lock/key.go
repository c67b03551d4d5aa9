package lock

import "fmt"

// maxKeyLen keeps a key, inside its "$KV.<bucket>." subject, well within
// what NATS routes comfortably.
const maxKeyLen = 256

// ValidateKey reports whether key can name a lock. The rules are those of
// NATS Key-Value keys: 1 to 256 characters from [A-Za-z0-9_=/.-], not
// starting or ending with '.', and no empty token ("a..b"). Wildcards ('*',
// '>') and spaces are not allowed.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("lock: invalid key %q: must not be empty", key)
	}
	if len(key) > maxKeyLen {
		return fmt.Errorf("lock: invalid key %q: longer than %d characters", key, maxKeyLen)
	}
	if key[0] == '.' || key[len(key)-1] == '.' {
		return fmt.Errorf("lock: invalid key %q: must not start or end with '.'", key)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '=', c == '/':
		case c == '.':
			if key[i-1] == '.' {
				return fmt.Errorf("lock: invalid key %q: empty token between dots", key)
			}
		default:
			return fmt.Errorf("lock: invalid key %q: character %q at %d is not allowed (use A-Z a-z 0-9 _ = / - and '.' between tokens)", key, c, i)
		}
	}
	return nil
}
