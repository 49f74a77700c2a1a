package ws

import (
	"encoding/json"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// A connection's credential is re-checked for as long as it is open (auth.Liveness): each
// message is refused with AUTHENTICATION_FAILED (4001, data.reason "expired" or "revoked")
// before any of its calls runs — so no hop token is minted for it — once the credential
// has expired or been revoked, and the connection is closed then without waiting for a
// message: at the credential's expiry (a timer), and when it is revoked (at once on the
// replica that revokes, within auth.revocation.refresh on the others).
//
// The close code is CloseCredentialEnded (4001), from the range RFC 6455 §7.4.2 leaves to
// applications, with the reason as its text: 1008 (policy violation) already closes a slow
// consumer, and a client must tell "authenticate again and reconnect" from "read faster".

// CloseCredentialEnded is the close code of a connection whose credential expired or was
// revoked; the close reason is CloseReasonExpired or CloseReasonRevoked.
const CloseCredentialEnded = 4001

// Close reasons of a connection whose credential ended.
const (
	CloseReasonExpired = "credential expired"
	CloseReasonRevoked = "credential revoked"
)

// MethodAuthRenew (client → server, WebSocket) replaces the connection's credential
// without reconnecting: params {"token": "<JWT>"}. The token is authenticated as an
// upgrade's would be and must name the same subject of the same issuer; its scopes, tier
// and expiry apply to every message read after it. The result is {"expires_at": <RFC 3339>}
// (without expires_at for a credential that does not expire). A token that fails, or names
// another subject, is refused with 4001 and the connection keeps its credential.
const MethodAuthRenew = "$/auth/renew"

// credentialEnded closes the connection whose credential expired or was revoked: its calls
// are abandoned and it closes with CloseCredentialEnded. It runs on the watch's timer, on
// the revocation list's follower, or on a message's goroutine, and does not block.
func (c *wsConn) credentialEnded(err error) {
	reason := CloseReasonRevoked
	if auth.ReasonOf(err) == auth.ReasonExpired {
		reason = CloseReasonExpired
	}
	c.cancel()
	c.closeWith(CloseCredentialEnded, reason)
}

// refuse answers every request of a message whose credential has ended with err, if the
// answer can still go out before the close frame; nothing of it runs.
func (c *wsConn) refuse(payload jsonrpc.Payload, derr *jsonrpc.DecodeError, enc faces.Encoding, err error) {
	out := faces.Reject(payload, derr, nil, gateway.AsError(err), observability.NewTraceID())
	if len(out) > 0 && c.send.TryPush(c.frame(enc, out), c.send.Cap(), c.cfg.SendQueueBytes) {
		c.kick()
	}
}

// renew serves MethodAuthRenew: the new token is authenticated by the configuration in
// force and replaces the connection's principal when it names the same subject. It runs
// on the reader, so every message read after it runs with the new credential.
func (c *wsConn) renew(req *jsonrpc.Request) ([]byte, *gateway.Error) {
	var params struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(req.Params, &params); err != nil || params.Token == "" {
		return nil, gateway.NewError(schemas.CodeInvalidParams).With("reason", MethodAuthRenew+" takes {token}")
	}
	rt := c.f.gw.Acquire()
	p, err := rt.Authenticator().Authenticate(c.ctx, gateway.Credentials{Bearer: params.Token, Zone: gateway.ZoneExternal})
	rt.Release()
	if err == nil {
		err = c.cred.Renew(p)
	}
	if err != nil {
		return nil, gateway.AsError(err)
	}
	var res struct {
		ExpiresAt *time.Time `json:"expires_at,omitempty"`
	}
	if exp := c.cred.Expires(); !exp.IsZero() {
		exp = exp.UTC()
		res.ExpiresAt = &exp
	}
	out, _ := json.Marshal(res) // a struct of a time always marshals
	return out, nil
}
