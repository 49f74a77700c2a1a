package resilience

// ConfigError is one problem of a resilience section, at a dotted path inside it
// ("rules[2].rate"); the server prefixes the section's name and positions it in the file.
type ConfigError struct {
	Path string
	Msg  string
}

func (e ConfigError) Error() string { return e.Path + ": " + e.Msg }
