package prototest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/internal/proto/graphqlws"
)

// dial opens a WebSocket to addr offering sub, failing the test unless it
// opens.
func dial(t *testing.T, addr string, sub ...string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{Subprotocols: sub}
	ws, _, err := d.Dial("ws://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// ask sends req and returns the one JSON answer.
func ask(t *testing.T, ws *websocket.Conn, req string) map[string]any {
	t.Helper()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
		t.Fatal(err)
	}
	_, b, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// TestRPCServer: a call is answered by id; an unknown method and an
// event not registered are refused in JSON-RPC's words.
func TestRPCServer(t *testing.T) {
	ws := dial(t, (&RPCServer{}).Start(t))
	if v := ask(t, ws, `{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":7}`); v["result"] != 3.0 || v["id"] != 7.0 {
		t.Errorf("sum: %v, want result 3 id 7", v)
	}
	if v := ask(t, ws, `{"jsonrpc":"2.0","method":"nope","id":8}`); v["error"].(map[string]any)["code"] != -32601.0 {
		t.Errorf("unknown method: %v, want error -32601", v)
	}
	if v := ask(t, ws, `{"jsonrpc":"2.0","method":"rpc.on","params":["news3","bogus"],"id":9}`); v["result"].(map[string]any)["bogus"] != "provided event invalid" || v["result"].(map[string]any)["news3"] != "ok" {
		t.Errorf("rpc.on: %v, want news3 ok, bogus invalid", v)
	}
}

// TestGQLServer: connection_init with the token is acked over the
// subprotocol; without it the server closes 4403.
func TestGQLServer(t *testing.T) {
	s := &GQLServer{Token: "t"}
	addr := s.Start(t)
	if v := ask(t, dial(t, addr, graphqlws.Subprotocol), `{"type":"connection_init","payload":{"token":"t"}}`); v["type"] != "connection_ack" || s.Subprotocol.Load() != graphqlws.Subprotocol {
		t.Errorf("init: %v over %v, want connection_ack over %s", v, s.Subprotocol.Load(), graphqlws.Subprotocol)
	}
	ws := dial(t, addr, graphqlws.Subprotocol)
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"connection_init"}`)); err != nil {
		t.Fatal(err)
	}
	var ce *websocket.CloseError
	if _, _, err := ws.ReadMessage(); !errors.As(err, &ce) || ce.Code != 4403 {
		t.Errorf("init without the token: %v, want close 4403", err)
	}
}

// TestRefuser: an upgrade answered with a status counts as an attempt.
func TestRefuser(t *testing.T) {
	s := &Refuser{Status: 403}
	_, resp, err := websocket.DefaultDialer.Dial("ws://"+s.Start(t)+"/", nil)
	if err == nil || resp == nil || resp.StatusCode != 403 || s.Attempts.Load() != 1 {
		t.Errorf("dial: %v (%v), %d attempts; want 403, 1 attempt", err, resp, s.Attempts.Load())
	}
}

// TestMosquittoConf: a plain listener, then the websockets one on the
// address asked for, then the extra lines or anonymous clients allowed.
func TestMosquittoConf(t *testing.T) {
	conf := mosquittoConf("127.0.0.1:1884", "127.0.0.1:1885", nil)
	if !strings.HasPrefix(conf, "listener 1885 127.0.0.1\nlistener 1884 127.0.0.1\nprotocol websockets\n") || !strings.HasSuffix(conf, "allow_anonymous true\n") {
		t.Errorf("default configuration:\n%s", conf)
	}
	if conf := mosquittoConf("127.0.0.1:1884", "127.0.0.1:1885", []string{"allow_anonymous false"}); strings.Contains(conf, "allow_anonymous true") {
		t.Errorf("with extra lines:\n%s", conf)
	}
}
