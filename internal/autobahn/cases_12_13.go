package autobahn

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Sections 12 and 13 of Autobahn|Testsuite: permessage-deflate
// (autobahn/case/case12_x_x.py). Each case offers permessage-deflate,
// then sends 1000 compressed messages one after the other, each cut from a
// test data set at a running offset, and checks every echo. 12.x uses the
// default offer on five data sets; 13.x uses the JSON data set with seven
// offers. A server that does not accept the offer gets UNIMPLEMENTED.
//
// Autobahn's data sets are files shipped with the testsuite (Goethe's
// Faust, the Lena bitmap, a PDF, a JSON and an HTML file). They are not
// copied here; generateData builds deterministic stand-ins of the same
// nature (text or binary, repetitive or not), so the cases check the same
// behavior while compression ratios differ from Autobahn's.

// msgSizes is Autobahn's MSG_SIZES: payload length, message count, case
// timeout in seconds and auto-fragment size.
var msgSizes = []struct{ n, count, wait, frag int }{
	{16, 1000, 60, 0}, {64, 1000, 60, 0}, {256, 1000, 120, 0}, {1024, 1000, 240, 0},
	{4096, 1000, 480, 0}, {8192, 1000, 480, 0}, {16384, 1000, 480, 0}, {32768, 1000, 480, 0},
	{65536, 1000, 480, 0}, {131072, 1000, 480, 0},
	{8192, 1000, 480, 256}, {16384, 1000, 480, 256}, {32768, 1000, 480, 256}, {65536, 1000, 480, 256},
	{131072, 1000, 480, 256}, {131072, 1000, 480, 1024}, {131072, 1000, 480, 4096}, {131072, 1000, 480, 32768},
}

// testData is one data set: Autobahn's name and description, and whether
// its messages go as binary.
type testData struct {
	name, desc string
	binary     bool
	gen        func() []byte
}

// dataSets is WS_COMPRESSION_TESTDATA in Autobahn's order (12.1-12.5).
var dataSets = []testData{
	{"json_data1", "Large JSON data file", false, genJSON},
	{"lena512", "Lena Picture, Bitmap 512x512 bw", true, genBitmap},
	{"gutenberg_faust", "Human readable text, Goethe's Faust I (German)", true, genProse},
	{"html_data1", "Large HTML file", false, genHTML},
	{"ooms", "A larger PDF", true, genPDF},
}

var dataCache sync.Map // name -> []byte

func (d testData) bytes() []byte {
	if b, ok := dataCache.Load(d.name); ok {
		return b.([]byte)
	}
	b, _ := dataCache.LoadOrStore(d.name, d.gen())
	return b.([]byte)
}

// dataSize is the size of every generated data set: more than the biggest
// message, so messages wrap around at different offsets.
const dataSize = 300 << 10

var words = strings.Fields(`der die das und ist nicht ich du er sie es wir ihr zu mit von auf für
	Faust Mephistopheles Gretchen Wagner Geist Himmel Erde Natur Welt Leben Tod Liebe Seele Herz
	habe nun ach Philosophie Juristerei Medizin leider auch Theologie durchaus studiert heißem Bemühn
	da steh ich armer Tor bin so klug als wie zuvor Magister heiße Doktor gar zehen Jahr`)

func genProse() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < dataSize {
		n := 4 + r.IntN(10)
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteString(".\n")
	}
	return []byte(b.String()[:dataSize])
}

// genJSON and genHTML are ASCII only, so any byte slice of them is valid
// UTF-8 (Autobahn slices its text data by code points).
func genJSON() []byte {
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("[")
	for i := 0; b.Len() < dataSize; i++ {
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%d","active":%t,"score":%.3f,"tags":["t%d","t%d"],"address":{"city":"city-%d","zip":"%05d"}},`+"\n",
			i, r.IntN(100000), r.IntN(2) == 0, r.Float64()*100, r.IntN(50), r.IntN(50), r.IntN(500), r.IntN(100000))
	}
	return []byte(b.String()[:dataSize])
}

func genHTML() []byte {
	r := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><title>data</title></head><body>\n")
	for i := 0; b.Len() < dataSize; i++ {
		fmt.Fprintf(&b, "<div class=\"row r%d\"><a href=\"/item/%d\">item %d</a><span>%d</span><p>", i%7, r.IntN(100000), i, r.IntN(1000))
		for range 3 + r.IntN(8) {
			b.WriteString(asciiWord(r))
			b.WriteByte(' ')
		}
		b.WriteString("</p></div>\n")
	}
	return []byte(b.String()[:dataSize])
}

func asciiWord(r *rand.Rand) string {
	w := words[r.IntN(len(words))]
	var b strings.Builder
	for _, c := range w {
		if c < 0x80 {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// genBitmap is a 512x512 8-bit grey picture: smooth gradients plus noise,
// behind a BMP-like header.
func genBitmap() []byte {
	r := rand.New(rand.NewPCG(7, 8))
	b := make([]byte, 0, dataSize)
	b = append(b, "BM"...)
	b = append(b, make([]byte, 1076)...) // header and palette
	for y := 0; len(b) < dataSize; y++ {
		for x := range 512 {
			v := (x*x/512 + y*3 + int(r.IntN(9))) & 0xff
			b = append(b, byte(v))
		}
	}
	return b[:dataSize]
}

// genPDF mixes ASCII object syntax with incompressible stream bytes.
func genPDF() []byte {
	r := rand.New(rand.NewPCG(9, 10))
	b := []byte("%PDF-1.4\n")
	for i := 1; len(b) < dataSize; i++ {
		b = fmt.Appendf(b, "%d 0 obj\n<< /Length %d /Filter /FlateDecode >>\nstream\n", i, 2048)
		for range 2048 {
			b = append(b, byte(r.Uint32()))
		}
		b = append(b, "\nendstream\nendobj\n"...)
	}
	return b[:dataSize]
}

// registerSections12And13 registers sections 12 and 13 (permessage-deflate).
func registerSections12And13() {
	defaultOffer := []deflateOffer{{}}
	for j, d := range dataSets {
		registerDeflate(fmt.Sprintf("12.%d", j+1), d, defaultOffer, "Use default permessage-deflate offer.")
	}
	offers := [][]deflateOffer{
		{{}},
		{{requestNoContextTakeover: true}},
		{{requestMaxWindowBits: 9}},
		{{requestMaxWindowBits: 15}},
		{{requestNoContextTakeover: true, requestMaxWindowBits: 9}},
		{{requestNoContextTakeover: true, requestMaxWindowBits: 15}},
		{{requestNoContextTakeover: true, requestMaxWindowBits: 9}, {requestNoContextTakeover: true}, {}},
	}
	for j, o := range offers {
		var desc []string
		for _, x := range o {
			desc = append(desc, fmt.Sprintf("(%t, %d)", x.requestNoContextTakeover, x.requestMaxWindowBits))
		}
		registerDeflate(fmt.Sprintf("13.%d", j+1), dataSets[0], o,
			fmt.Sprintf("Use permessage-deflate client offers (requestNoContextTakeover, requestMaxWindowBits): [%s]", strings.Join(desc, ", ")))
	}
}

func registerDeflate(prefix string, d testData, offers []deflateOffer, offerDesc string) {
	for i, sz := range msgSizes {
		register(&Case{
			ID:          fmt.Sprintf("%s.%d", prefix, i+1),
			Description: fmt.Sprintf("Send %d compressed messages each of payload size %d, auto-fragment to %d octets (%s data). %s", sz.count, sz.n, sz.frag, d.name, offerDesc),
			Expectation: fmt.Sprintf("Receive echo'ed messages (with payload as sent). Timeout case after %d secs.", sz.wait),
			Big:         sz.n*sz.count >= 1<<20,
			offers:      offers,
			open: func(s *session) {
				s.expClose = normalClose()
				if s.pmd == nil {
					s.behavior = Unimplemented
					s.result = "The server did not accept the permessage-deflate offer."
					s.sendClose(closeNormal, "")
					return
				}
				data := d.bytes()
				s.behavior = Failed
				s.result = fmt.Sprintf("Case did not finish within %d seconds.", sz.wait)
				s.closeAfter(time.Duration(sz.wait) * time.Second)
				ptr, count := 0, 0
				var want []byte
				sendOne := func() {
					to := (ptr + sz.n) % len(data)
					if to > ptr {
						want = data[ptr:to]
					} else {
						want = append(append([]byte(nil), data[ptr:]...), data[:to]...)
					}
					ptr = to
					count++
					s.sendCompressed(want, d.binary, sz.frag)
				}
				s.deflateNext = func(ev event) {
					s.progress = fmt.Sprintf("%d of %d messages echoed", count, sz.count)
					switch {
					case ev.binary != d.binary:
						s.result = fmt.Sprintf("Echo'ed message %d: type differs from what I sent (got binary %t, expected binary %t).", count, ev.binary, d.binary)
					case len(ev.payload) != len(want):
						s.result = fmt.Sprintf("Echo'ed message %d: length differs from what I sent (got length %d, expected length %d).", count, len(ev.payload), len(want))
					case string(ev.payload) != string(want):
						s.result = fmt.Sprintf("Echo'ed message %d: contents differ from what I sent.", count)
					case count < sz.count:
						sendOne()
						return
					default:
						s.behavior = OK
						s.result = "Ok, received all echo'ed messages in time."
					}
					s.sendClose(closeNormal, "")
				}
				sendOne()
			},
			onMessage: func(s *session, ev event) {
				if s.deflateNext != nil {
					s.deflateNext(ev)
				}
			},
		})
	}
}
