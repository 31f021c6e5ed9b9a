package timeflag

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 2, 10, 30, 0, 0, time.UTC)
	at := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err)
		}
		return t
	}
	tests := []struct {
		name  string
		input string
		want  time.Time // zero with wantErr: refused
		err   bool
	}{
		// What --at took before, and --from and --to did not.
		{"now", "now", now, false},
		{"space around", "  2026-11-02T10:00:00Z\n", at("2026-11-02T10:00:00Z"), false},
		// What --from and --to took before, and --at did not.
		{"Unix zero", "0", time.Unix(0, 0), false},
		{"negative Unix seconds", "-86400", time.Unix(-86400, 0), false},
		// What all of them took.
		{"RFC 3339 UTC", "2026-11-02T10:00:00Z", at("2026-11-02T10:00:00Z"), false},
		{"RFC 3339 with an offset", "2026-11-02T12:00:00+02:00", at("2026-11-02T10:00:00Z"), false},
		{"RFC 3339 nanoseconds", "2026-11-02T10:00:00.123456789Z", at("2026-11-02T10:00:00.123456789Z"), false},
		{"Unix seconds", "1793613600", at("2026-11-02T10:00:00Z"), false},
		{"Unix seconds, a plus sign", "+1793613600", at("2026-11-02T10:00:00Z"), false},
		// Exact to the nanosecond, which a float64 of 1.8e9 seconds is not
		// (its step there is 238ns).
		{"Unix nanoseconds exactly", "1793613600.123456789", time.Unix(1793613600, 123456789), false},
		{"Unix fraction cut at the nanosecond", "1793613600.1234567891", time.Unix(1793613600, 123456789), false},
		{"Unix half second", "1793613600.5", time.Unix(1793613600, 5e8), false},
		{"negative fraction", "-1.5", time.Unix(-2, 5e8), false},
		{"fraction alone", ".25", time.Unix(0, 25e7), false},
		{"trailing point", "1793613600.", at("2026-11-02T10:00:00Z"), false},
		{"exponent", "1.7936136e9", at("2026-11-02T10:00:00Z"), false},
		// Not given: the zero time, whatever the flag makes of it.
		{"empty", "", time.Time{}, false},
		{"blank", "   ", time.Time{}, false},

		{"beyond 2262", "1e18", time.Time{}, true},
		{"beyond 2262 in RFC 3339", "9999-01-01T00:00:00Z", time.Time{}, true},
		{"a word", "yesterday", time.Time{}, true},
		{"relative", "-1h", time.Time{}, true},
		{"date alone", "2026-11-02", time.Time{}, true},
		{"space for T", "2026-11-02 10:00:00Z", time.Time{}, true},
		{"no zone", "2026-11-02T10:00:00", time.Time{}, true},
		{"Now", "Now", time.Time{}, true},
		{"two signs", "+-5", time.Time{}, true},
		{"a point", ".", time.Time{}, true},
		{"sign alone", "-", time.Time{}, true},
		{"NaN", "NaN", time.Time{}, true},
		{"infinity", "Inf", time.Time{}, true},
		{"beyond int64 seconds", "1e19", time.Time{}, true},
		{"beyond int64 digits", "99999999999999999999", time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.input, now)
			if tt.err {
				require.Error(t, err)
				want := fmt.Sprintf("%q is neither now, an RFC 3339 time (2026-11-02T10:00:00Z) nor Unix seconds", tt.input)
				if strings.HasPrefix(tt.name, "beyond 2262") {
					want = fmt.Sprintf("%q lies outside the years 1677 to 2262, the times Unix nanoseconds hold", tt.input)
				}
				assert.Equal(t, want, err.Error())
				return
			}
			require.NoError(t, err)
			assert.True(t, tt.want.Equal(got), "Parse(%q) = %s, want %s", tt.input, got.UTC().Format(time.RFC3339Nano), tt.want.UTC().Format(time.RFC3339Nano))
			assert.Equal(t, tt.want.IsZero(), got.IsZero(), "only \"\" is the zero time")
		})
	}
}

func ExampleParse() {
	now := time.Date(2026, 11, 2, 10, 30, 0, 0, time.UTC)
	for _, s := range []string{"now", "2026-11-02T12:00:00+02:00", "1793613600.5"} {
		t, _ := Parse(s, now)
		fmt.Println(t.UTC().Format(time.RFC3339Nano))
	}
	// Output:
	// 2026-11-02T10:30:00Z
	// 2026-11-02T10:00:00Z
	// 2026-11-02T10:00:00.5Z
}
