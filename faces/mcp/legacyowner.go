package mcpface

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// A legacy SSE session (GET /sse, then POST /message?sessionId=…) is bound to the caller
// that opened it, as a streamable HTTP session is: its ID is 16 random bytes and the
// session owner (ownerOf: a hash of the caller's issuer and subject), both hex, and a message whose caller is
// not the owner is answered as for an unknown session — a leaked session ID is no use
// without its owner's credential, and nobody can post into another caller's session.

// legacySessionID is the ID of a new legacy SSE session opened by r's caller.
func legacySessionID(_ context.Context, r *http.Request) (string, error) {
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	p, _ := r.Context().Value(principalKey{}).(gateway.Principal)
	owner := ownerOf(p)
	return hex.EncodeToString(rnd[:]) + "-" + hex.EncodeToString(owner[:]), nil
}

// ownsLegacySession reports whether r's caller owns the legacy session r names.
func ownsLegacySession(r *http.Request) bool {
	_, ownerHex, ok := strings.Cut(r.URL.Query().Get("sessionId"), "-")
	if !ok {
		return false
	}
	p, _ := r.Context().Value(principalKey{}).(gateway.Principal)
	owner := ownerOf(p)
	return ownerHex == hex.EncodeToString(owner[:])
}

// writeUnknownLegacySession answers a message for a session its caller does not own
// exactly as mcp-go answers one for a session that does not exist.
func writeUnknownLegacySession(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid session ID"}}` + "\n"))
}
