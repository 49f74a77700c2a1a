// Package tlsconf turns a listener's tls section (certificate, key and client CA files) into
// the *tls.Config the listener serves with, re-reading the files when they change so that a
// rotated certificate is served to new connections without a restart and without touching
// the connections already open. It also writes the development certificates of
// `gatehouse dev-certs` (devcerts.go), which the tests reuse.
//
// The server package builds one Source per listener with a tls section and hands the faces
// a *tls.Config (Source.ServerConfig); no face ever sees a file path.
package tlsconf
