"""`film measure`: time to first token and decode speed of a live OpenAI-compatible endpoint.

Definitions (vLLM's benchmark convention; the film uses the same):
    TTFT         from sending the request to the first streamed token of any kind: reasoning
                 (`reasoning_content` / `reasoning` deltas) or content
    TTFC         from sending the request to the first content token (later than TTFT only when
                 the model reasons first)
    TPOT         (end-to-end time - TTFT) / (output tokens - 1), output tokens including reasoning
                 tokens; decode rate = 1 / TPOT
    ITL          the gaps between streamed token chunks (percentiles)

Prompts are cold by default: each request opens with a sentence of random words that no other
request of the run shares, so a server's prefix cache (vLLM's automatic prefix caching, SGLang's
radix cache, llama.cpp's slot cache) cannot serve it and TTFT measures prefill. `--warm-prefix`
measures the cached case on purpose: one prompt per length, sent once before its timed runs.

Prompt sizes always come from the server: the stream's `usage` (asked for with
stream_options.include_usage), else a non-streamed request for the same prompt (max_tokens 1,
whose response carries usage); only when the server reports no usage at all are they estimated
(one token per word), and the dataset says so.

Every request has a timeout, the run has a cap on requests, 429s are retried after their
Retry-After (bounded), a failed run is reported and left out, and the dataset is written
(atomically) only when every prompt length has enough good runs. The API key is read from an
environment variable and never printed or written.

    client.py    an OpenAI-compatible endpoint, timed: one streamed request under a deadline, retried
    redact.py    the API key kept out of every text that leaves the program; the server's own words from an error
    prompts.py   prompts of a size the endpoint itself counts, each cold unless asked warm
    timings.py   every prompt length at every concurrency level, timed and summarised
    dataset.py   the measurement written as a data/measured/ dataset, through the fields the film reads
    load.py      film measure --load: an open-loop Poisson stream, every request timed, as a load dataset
"""
