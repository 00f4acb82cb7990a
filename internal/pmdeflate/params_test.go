package pmdeflate

import (
	"errors"
	"strings"
	"testing"
)

func TestOffer(t *testing.T) {
	for _, tc := range []struct {
		p    Params
		want string
	}{
		{Params{}, "permessage-deflate; client_max_window_bits"},
		{Params{ClientNoContextTakeover: true, ServerNoContextTakeover: true},
			"permessage-deflate; client_no_context_takeover; server_no_context_takeover; client_max_window_bits"},
		{Params{ClientMaxWindowBits: 12, ServerMaxWindowBits: 10},
			"permessage-deflate; client_max_window_bits=12; server_max_window_bits=10"},
	} {
		if got := Offer(tc.p); got != tc.want {
			t.Errorf("Offer(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	if errs := (Params{ServerMaxWindowBits: 8, ClientMaxWindowBits: 15}).Validate(); len(errs) != 0 {
		t.Errorf("valid params: %v", errs)
	}
	errs := Params{ServerMaxWindowBits: 7, ClientMaxWindowBits: 16}.Validate()
	if len(errs) != 2 {
		t.Fatalf("want 2 errors, got %v", errs)
	}
	if want := "server_max_window_bits: must be 0 (not sent) or in [8, 15], got 7"; errs[0].Error() != want {
		t.Errorf("got %q, want %q", errs[0], want)
	}
}

func TestAccept(t *testing.T) {
	noCtx := Params{ClientNoContextTakeover: true, ServerNoContextTakeover: true}
	for _, tc := range []struct {
		name    string
		header  string
		offered Params
		want    Params
	}{
		{"plain", "permessage-deflate", Params{},
			Params{ServerMaxWindowBits: 15, ClientMaxWindowBits: 15}},
		{"gorilla", "permessage-deflate; server_no_context_takeover; client_no_context_takeover", Params{},
			Params{ServerNoContextTakeover: true, ClientNoContextTakeover: true, ServerMaxWindowBits: 15, ClientMaxWindowBits: 15}},
		{"both asked", "permessage-deflate; server_no_context_takeover; client_no_context_takeover", noCtx,
			Params{ServerNoContextTakeover: true, ClientNoContextTakeover: true, ServerMaxWindowBits: 15, ClientMaxWindowBits: 15}},
		{"client hint kept", "permessage-deflate; server_no_context_takeover", noCtx,
			Params{ServerNoContextTakeover: true, ClientNoContextTakeover: true, ServerMaxWindowBits: 15, ClientMaxWindowBits: 15}},
		{"gws takeover", "permessage-deflate; server_max_window_bits=12; client_max_window_bits=12", Params{},
			Params{ServerMaxWindowBits: 12, ClientMaxWindowBits: 12}},
		{"case, spaces, quotes", " Permessage-Deflate ;Server_Max_Window_Bits=\"9\" ; client_max_window_bits = 8", Params{ServerMaxWindowBits: 10},
			Params{ServerMaxWindowBits: 9, ClientMaxWindowBits: 8}},
		{"client keeps its offered limit", "permessage-deflate", Params{ClientMaxWindowBits: 10},
			Params{ServerMaxWindowBits: 15, ClientMaxWindowBits: 10}},
		{"window equal to offer", "permessage-deflate; server_max_window_bits=10; client_max_window_bits=11", Params{ServerMaxWindowBits: 10, ClientMaxWindowBits: 11},
			Params{ServerMaxWindowBits: 10, ClientMaxWindowBits: 11}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Accept(tc.header, tc.offered)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAcceptErrors(t *testing.T) {
	for _, tc := range []struct {
		header  string
		offered Params
		want    string // the reason, after the quoted header
	}{
		{"x-webkit-deflate-frame", Params{}, `extension "x-webkit-deflate-frame" was not offered`},
		{"permessage-deflate, permessage-deflate", Params{}, "2 extensions in the response, the client offered one (permessage-deflate)"},
		{"permessage-deflate; foo", Params{}, `unknown parameter "foo"`},
		{"permessage-deflate;", Params{}, "empty parameter"},
		{"permessage-deflate; server_no_context_takeover; server_no_context_takeover", Params{}, "server_no_context_takeover: given twice"},
		{"permessage-deflate; client_max_window_bits=10; client_max_window_bits=10", Params{}, "client_max_window_bits: given twice"},
		{"permessage-deflate; client_no_context_takeover=1", Params{}, `client_no_context_takeover: takes no value, got "1"`},
		{"permessage-deflate; server_max_window_bits", Params{}, "server_max_window_bits: needs a value in a response"},
		{"permessage-deflate; server_max_window_bits=16", Params{}, `server_max_window_bits: must be in [8, 15], got "16"`},
		{"permessage-deflate; client_max_window_bits=7", Params{}, `client_max_window_bits: must be in [8, 15], got "7"`},
		{"permessage-deflate; client_max_window_bits=09", Params{}, `client_max_window_bits: must be in [8, 15], got "09"`},
		{"permessage-deflate; client_max_window_bits=x", Params{}, `client_max_window_bits: must be in [8, 15], got "x"`},
		{"permessage-deflate; server_max_window_bits=11", Params{ServerMaxWindowBits: 10}, "server_max_window_bits=11: above the 10 offered"},
		{"permessage-deflate; client_max_window_bits=12", Params{ClientMaxWindowBits: 9}, "client_max_window_bits=12: above the 9 offered"},
		{"permessage-deflate", Params{ServerNoContextTakeover: true}, "server_no_context_takeover was asked and not agreed to"},
		{"permessage-deflate; server_no_context_takeover", Params{ServerMaxWindowBits: 10}, "server_max_window_bits=10 was asked and not agreed to"},
	} {
		t.Run(tc.header, func(t *testing.T) {
			_, err := Accept(tc.header, tc.offered)
			if err == nil {
				t.Fatal("accepted")
			}
			want := "sec-websocket-extensions " + quote(tc.header) + ": " + tc.want
			if err.Error() != want {
				t.Errorf("got  %q\nwant %q", err, want)
			}
		})
	}
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(strings.TrimSpace(s), `"`, `\"`) + `"`
}

func TestAcceptDeclined(t *testing.T) {
	for _, h := range []string{"", "  "} {
		if _, err := Accept(h, Params{}); !errors.Is(err, ErrDeclined) || err.Error() != "compression asked, server declined" {
			t.Errorf("Accept(%q) = %v, want ErrDeclined", h, err)
		}
	}
}

func TestParamsString(t *testing.T) {
	p := Params{ClientNoContextTakeover: true, ServerMaxWindowBits: 10}
	want := "permessage-deflate; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=15"
	if got := p.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
