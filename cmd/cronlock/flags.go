package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"strings"

	"github.com/cronlock/cronlock/internal/config"
)

// envConfig names the configuration file when -c is not given.
const envConfig = "CRONLOCK_CONFIG"

// defaultConfig is the configuration file when neither -c nor
// CRONLOCK_CONFIG names one.
const defaultConfig = "cronlock.yaml"

// errHelp reports that --help was given and the usage printed: exit 0.
var errHelp = errors.New("help requested")

// usageError is bad usage or a bad configuration file: exit 2.
type usageError struct {
	err       error
	configErr bool // err is config.Load's, printed as is (file:line: field: msg)
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// flagSet is one command's flags. The flag package writes its messages to
// out, and parse decides whether they go to stdout (--help) or stderr.
type flagSet struct {
	*flag.FlagSet
	c      *cli
	usage  string // the command's usage text
	out    bytes.Buffer
	config string // -c / --config
}

// newFlags returns the flags of the command name, with usage as its help
// text (synopsis, description, flags). With withConfig it defines -c and
// --config.
func (c *cli) newFlags(name, usage string, withConfig bool) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet("cronlock "+name, flag.ContinueOnError), c: c, usage: usage}
	fs.SetOutput(&fs.out)
	fs.Usage = func() {} // parse prints the usage text itself
	if withConfig {
		def := defaultConfig
		if v := c.getenv(envConfig); v != "" {
			def = v
		}
		fs.StringVar(&fs.config, "c", def, "configuration file")
		fs.StringVar(&fs.config, "config", def, "configuration file")
	}
	return fs
}

// parse parses args. --help prints the usage to stdout and returns errHelp;
// a bad flag returns a usage error. With maxArgs >= 0, more positional
// arguments than that are a usage error, and so is a flag written after a
// positional argument (Go's flag package stops at the first argument).
func (fs *flagSet) parse(args []string, maxArgs int) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(fs.c.stdout, strings.TrimLeft(fs.usage, "\n"))
		return errHelp
	}
	if err != nil {
		return usagef("%v", err)
	}
	if maxArgs >= 0 && fs.NArg() > maxArgs {
		extra := fs.Args()[maxArgs:]
		if strings.HasPrefix(extra[0], "-") {
			return usagef("flag %s after an argument: flags come first", extra[0])
		}
		return usagef("unexpected argument %q", extra[0])
	}
	return nil
}

// load reads and validates the configuration file; its errors are usage
// errors (exit 2) printed as config.Load formats them.
func (fs *flagSet) load() (*config.Config, error) {
	cfg, err := config.Load(fs.config)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, usagef("configuration file %q not found: name it with -c FILE or %s", fs.config, envConfig)
	}
	if err != nil {
		return nil, &usageError{err: err, configErr: true}
	}
	return cfg, nil
}
