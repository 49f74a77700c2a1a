package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/auth/tlsconf"
)

// devCerts writes the development certificates (tlsconf.WriteDev) into a directory:
// `gatehouse dev-certs [--force] DIR`.
func devCerts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dev-certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "replace the files of an existing set")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: gatehouse dev-certs [--force] DIR")
		return 2
	}
	paths, err := tlsconf.WriteDev(fs.Arg(0), *force)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse dev-certs:", err)
		return 1
	}
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	fmt.Fprintf(stdout, "development certificates only: the CA key is in %s; client identity %s\n", fs.Arg(0), tlsconf.DevClientID)
	return 0
}
