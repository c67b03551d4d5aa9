package lock

// Validate reports the first setting of o that New refuses, naming the
// field ("lock: Options.RenewInterval 9.5s: must be shorter than ..."); nil
// when New would accept o. Zero values are valid: they select the
// defaults. The rules are New's own (withDefaults), so the two cannot
// disagree.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}
