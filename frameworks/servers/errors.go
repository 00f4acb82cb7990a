package servers

import "errors"

// ErrUnsupported is what an adapter's Start wraps when an option asks for
// something its library cannot do, e.g. compression=true on a library
// without permessage-deflate: fmt.Errorf("compression: %w", ErrUnsupported).
// Refusing is better than a silent no-op, which would make a compressed run
// measure uncompressed traffic. The conformance tests skip such variants.
var ErrUnsupported = errors.New("not supported by this library")
