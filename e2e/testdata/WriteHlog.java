import java.io.FileOutputStream;
import java.io.PrintStream;
import java.util.Random;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;
import org.HdrHistogram.HistogramLogWriter;

/**
 * Writes an interval log with HdrHistogram's own HistogramLogWriter (the
 * Java reference implementation, Debian's libhdrhistogram-java), the way
 * jHiccup and load generators do: nanoseconds, 3 significant digits, one
 * histogram per tag and second, times relative to a StartTime. It prints,
 * per tag, what Java itself computes over the whole log: the total count,
 * getValueAtPercentile(99.9) (the sample of rank ceil(0.999 N), the rank
 * tunetimeout takes), the value of the sample of rank round(0.999 N) (the
 * rank hdrhistogram-go takes), and getMaxValue of the accumulated histogram.
 *
 * java -cp hdrhistogram.jar:. WriteHlog out.hlog seed
 */
public class WriteHlog {
    public static void main(String[] args) throws Exception {
        String out = args[0];
        Random r = new Random(Long.parseLong(args[1]));
        String[] tags = {null, "api", "db"};
        Histogram[] all = new Histogram[tags.length];
        for (int t = 0; t < tags.length; t++) {
            all[t] = new Histogram(3);
        }
        long startMs = 1793613600000L;
        try (PrintStream ps = new PrintStream(new FileOutputStream(out))) {
            HistogramLogWriter w = new HistogramLogWriter(ps);
            w.outputComment("[Logged by tunetimeout's e2e test with HdrHistogram's HistogramLogWriter]");
            w.outputLogFormatVersion();
            w.outputStartTime(startMs);
            w.setBaseTime(startMs);
            w.outputLegend();
            for (int sec = 0; sec < 90; sec++) {
                for (int t = 0; t < tags.length; t++) {
                    Histogram h = new Histogram(3600L * 1000 * 1000 * 1000, 3);
                    h.setStartTimeStamp(startMs + sec * 1000L);
                    h.setEndTimeStamp(startMs + (sec + 1) * 1000L);
                    if (tags[t] != null) {
                        h.setTag(tags[t]);
                    }
                    int n = 50 + r.nextInt(100) * (t + 1);
                    for (int i = 0; i < n; i++) {
                        // Lognormal around 20 ms (x the tag's factor), a slow tail.
                        double ms = Math.exp(Math.log(20.0 * (t + 1)) + 0.5 * r.nextGaussian());
                        if (r.nextInt(100) == 0) {
                            ms += 150 + r.nextInt(650);
                        }
                        h.recordValue((long) (ms * 1_000_000));
                    }
                    w.outputIntervalHistogram(h);
                    all[t].add(h);
                }
            }
        }
        for (int t = 0; t < tags.length; t++) {
            long n = all[t].getTotalCount();
            System.out.printf("%s %d %d %d %d%n", tags[t] == null ? "-" : tags[t], n,
                all[t].getValueAtPercentile(99.9), valueAtRank(all[t], Math.max(1, (long) (0.999 * n + 0.5))),
                all[t].getMaxValue());
        }
    }

    /** The highest value equivalent to the sample of rank r (1-based). */
    static long valueAtRank(Histogram h, long r) {
        long seen = 0;
        for (HistogramIterationValue v : h.recordedValues()) {
            seen += v.getCountAtValueIteratedTo();
            if (seen >= r) {
                return h.highestEquivalentValue(v.getValueIteratedTo());
            }
        }
        return h.getMaxValue();
    }
}
