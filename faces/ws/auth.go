package ws

import (
	"net/http"
	"strings"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// wsBearerPrefix starts the Sec-WebSocket-Protocol entry that carries a bearer token
// (bearer.<token>): browsers cannot set Authorization on a WebSocket upgrade, but can offer
// subprotocols.
const wsBearerPrefix = "bearer."

// credentials returns the credentials of a /ws upgrade request — its headers, or a bearer
// token offered as the subprotocol bearer.<token> — and the subprotocol to select. /ws
// defines no subprotocol of its own, so with a bearer entry the selected one is that entry
// itself: a browser fails the handshake when the server selects one it did not offer.
// A bearer entry together with an Authorization header, or two bearer entries, are refused
// as ambiguous; an empty one as malformed. The token is never logged.
func credentials(r *http.Request, zone gateway.TrustZone) (gateway.Credentials, string, *gateway.Error) {
	creds := faces.HTTPCredentials(r, zone)
	var entry string
	for _, p := range websocket.Subprotocols(r) {
		if !strings.HasPrefix(p, wsBearerPrefix) {
			continue
		}
		if entry != "" {
			return creds, "", wsRefusal(auth.ReasonAmbiguous)
		}
		entry = p
	}
	switch {
	case entry == "":
		return creds, "", nil
	case r.Header.Get("Authorization") != "":
		return creds, "", wsRefusal(auth.ReasonAmbiguous)
	case entry == wsBearerPrefix:
		return creds, "", wsRefusal(auth.ReasonMalformed)
	}
	creds.Bearer = entry[len(wsBearerPrefix):]
	return creds, entry, nil
}

// wsRefusal is the 4001 refusal of a credential for reason, as auth words it.
func wsRefusal(reason auth.Reason) *gateway.Error {
	return gateway.NewError(schemas.CodeAuthentication).With(auth.DataReason, string(reason))
}
