// ONNX Runtime (onnxruntime-node) timing one model for bench_contention.c:
//   node bench_contention_ort.js MODEL.onnx THREADS ITERATIONS
// prints "median_ms <ms>" of ITERATIONS timed runs after 3 warm-up runs, on a
// session of THREADS intra-op threads (sequential execution), the input
// filled with a fixed pattern. The module is found through NODE_PATH (the
// bench installs it into a folder of its own, never as a project dependency).
'use strict';
const ort = require('onnxruntime-node');

async function main() {
    const [model, threads, iterations] = process.argv.slice(2);
    const session = await ort.InferenceSession.create(model, {
        intraOpNumThreads: Number(threads),
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
    });
    const name = session.inputNames[0];
    const meta = session.inputMetadata ? session.inputMetadata[0] : null;
    const dims = meta && meta.shape ? meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1))
                                    : [1, 3, 224, 224];
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++)
        data[i] = ((i * 7919) % 1000) / 1000 - 0.5;
    const feeds = {[name]: new ort.Tensor('float32', data, dims)};
    for (let i = 0; i < 3; i++)
        await session.run(feeds);
    const times = [];
    for (let i = 0; i < Number(iterations); i++) {
        const t0 = process.hrtime.bigint();
        await session.run(feeds);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    const m = times.length;
    const median = m % 2 ? times[(m - 1) / 2] : (times[m / 2 - 1] + times[m / 2]) / 2;
    console.log(`median_ms ${median.toFixed(3)} version ${ort.env.versions ? ort.env.versions.common : '?'}`);
}

main().catch((e) => {
    console.error(`bench_contention_ort: ${e.message}`);
    process.exit(1);
});
