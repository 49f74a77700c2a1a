// Package hangup catches SIGHUP from the moment the process starts. A SIGHUP nobody has
// asked for ends a Go program (exit 129), and the packages the gateway imports take some
// milliseconds to initialise before main runs: this package has nearly no dependencies, so
// its init runs among the first, and a SIGHUP sent while the process starts waits in C
// instead of killing it.
package hangup

import (
	"os"
	"os/signal"
	"syscall"
)

// C receives SIGHUP; one sent before anyone reads it waits there (a burst counts once).
var C = make(chan os.Signal, 1)

func init() { signal.Notify(C, syscall.SIGHUP) }

// Stop stops delivering SIGHUP to C: the signal's default action applies again.
func Stop() { signal.Stop(C) }
