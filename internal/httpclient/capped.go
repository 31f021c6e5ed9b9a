package httpclient

import (
	"fmt"
	"io"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// ErrTooLarge is (wrapped in) the error of a request whose answer was
// larger than Options.MaxResponseBytes.
var ErrTooLarge error = errTooLarge{}

// errTooLarge is ErrTooLarge, its message written when asked, as the CLI
// names the option by then.
type errTooLarge struct{}

func (errTooLarge) Error() string {
	return fmt.Sprintf("the answer is larger than %s", usage.MaxResponseBytes)
}

// TooLargeError is an answer larger than Limit bytes.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the answer is larger than %s (%s)", human.Bytes(e.Limit), usage.MaxResponseBytes)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Capped reads up to limit bytes of r; reading more fails with a
// *TooLargeError. An input of exactly limit bytes reads to io.EOF.
func Capped(r io.Reader, limit int64) io.Reader {
	return &capped{r: r, left: limit, limit: limit}
}

type capped struct {
	r           io.Reader
	left, limit int64
}

func (c *capped) Read(p []byte) (int, error) { return ReadCapped(c.r, p, &c.left, c.limit) }

// ReadCapped is one Read of a capped reader over r with *left bytes left
// of limit: for readers that keep that state themselves.
func ReadCapped(r io.Reader, p []byte, left *int64, limit int64) (int, error) {
	if *left <= 0 {
		var one [1]byte
		for range 100 {
			n, err := r.Read(one[:])
			if n > 0 {
				return 0, &TooLargeError{Limit: limit}
			}
			if err != nil {
				return 0, err
			}
		}
		return 0, io.ErrNoProgress
	}
	if int64(len(p)) > *left {
		p = p[:*left]
	}
	n, err := r.Read(p)
	*left -= int64(n)
	return n, err
}
