package budget

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// NotIncludable is Includable's refusal: why a file a config includes is
// not read.
type NotIncludable struct{ Kind string }

func (e *NotIncludable) Error() string {
	return "not a regular file (" + e.Kind + "); an include is read only from a regular file"
}

// OpenInclude opens the file or directory p a config includes, to read,
// and returns it with its mode as opened. It refuses what Includable
// refuses (a *NotIncludable), by the path's mode before the open and by
// the open file's after it: p may name something else by then. The open
// does not wait, so that a named pipe put in p's place is refused rather
// than waited on (a plain open of a pipe waits for a writer); a regular
// file reads as it would anyway. nginx's includes in check and in the
// nginx config of --nginx-conf are opened with it.
func OpenInclude(p string) (*os.File, fs.FileInfo, error) {
	return openIncludeWith(p, openNonBlocking)
}

func openNonBlocking(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// openIncludeWith is OpenInclude opening with open.
func openIncludeWith(p string, open func(string) (*os.File, error)) (*os.File, fs.FileInfo, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, nil, err
	}
	if err := Includable(fi.Mode()); err != nil {
		return nil, nil, err
	}
	f, err := open(p)
	if err != nil {
		return nil, nil, err
	}
	if fi, err = f.Stat(); err == nil {
		err = Includable(fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// IsNotIncludable reports whether err is Includable's refusal.
func IsNotIncludable(err error) bool {
	var e *NotIncludable
	return errors.As(err, &e)
}
