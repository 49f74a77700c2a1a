// Package a2aclient runs the A2A client of the @a2a-js/sdk npm package (pinned in
// package.json and package-lock.json beside this file, installed under .tmp/a2aclient by
// make a2a-client-tools) against an A2A agent: client.mjs resolves the agent card and
// drives send, stream, get, list, subscribe and cancel as one principal, and tries the
// first one's task as another. The server's end-to-end test judges what it prints.
package a2aclient
