package graphqlws

import (
	"encoding/json"
	"testing"

	"github.com/wsplan/wsplan/internal/proto"
)

// TestGraphQLWSRooms: a room's subscription and mutation, and the
// delivery of what the mutation published, decoded from base64.
func TestGraphQLWSRooms(t *testing.T) {
	p, _ := New(&Settings{})
	rp := p.(proto.Rooms)
	s := &proto.Conn{}
	out, op, id, answered := rp.JoinRoom(nil, s, 7, nil)
	var v struct {
		ID, Type string
		Payload  struct {
			Query     string
			Variables map[string]string
		}
	}
	if err := json.Unmarshal(out, &v); err != nil || op != proto.OpText || !answered || string(id) != "1" || v.ID != "1" || v.Type != "subscribe" ||
		v.Payload.Query != gqlRoomSubscription || v.Payload.Variables["room"] != "room.7" {
		t.Fatalf("join: %s (%v), id %q, answered %v", out, err, id, answered)
	}
	payload := []byte("\x00\x01marker\xffbinary")
	out, _ = rp.PublishRoom(nil, s, 7, payload)
	if err := json.Unmarshal(out, &v); err != nil || v.ID != "q1" || v.Payload.Query != gqlRoomMutation || v.Payload.Variables["room"] != "room.7" {
		t.Fatalf("publish: %s (%v)", out, err)
	}
	next := `{"data":{"message":"` + v.Payload.Variables["data"] + `"}}`
	got, ok := rp.Delivery(&proto.Message{Msg: proto.NewMessage(proto.MsgNext, proto.OpText, nil, []byte("1"), []byte(next)).Msg}, nil)
	if !ok || string(got) != string(payload) {
		t.Errorf("delivery of %s: %q %v, want %q", next, got, ok, payload)
	}
	for _, m := range []proto.Message{
		proto.NewMessage(proto.MsgNext, proto.OpText, nil, []byte("1"), []byte(`{"data":{"message":null}}`)),
		proto.NewMessage(proto.MsgNext, proto.OpText, nil, []byte("1"), []byte(`{"data":{"message":"not base64!"}}`)),
		proto.NewMessage(proto.MsgError, proto.OpText, nil, []byte("1"), []byte(`[{"message":"x"}]`)),
	} {
		if _, ok := rp.Delivery(&m, nil); ok {
			t.Errorf("delivery of %s: ok", m.Body)
		}
	}
}
