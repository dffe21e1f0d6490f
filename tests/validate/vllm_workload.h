// make validate: a checked queue as a file a real server's benchmark can replay
// (make validate --save-workloads DIR writes one per queue).
//
// vLLM's `vllm bench serve --dataset-name custom` reads a JSON Lines file
// (its name must end in .jsonl), one request per line, each an object with
// a "prompt" string; some versions also read an "output_tokens" number per
// line when given --custom-output-len -1 (vllm/benchmarks/datasets.py,
// CustomDataset). The book's prompts are token ids meaningless to a real
// model, so each request gets a text prompt of as many words as its prompt
// has tokens: the replay matches the queue's shape, not its exact token
// counts (a real tokenizer counts words differently). `vllm bench serve`
// draws its own arrival times (--request-rate inf: all at once, as here).
#pragma once

#include <span>
#include <string>

#include "../../common/serving/workload.h"

namespace kv {

// Request r's text prompt: prompt_len words, "r17 w2 w3 ...", the first
// naming the request, so that no two requests share a prefix a server
// could cache (chapter 08).
inline std::string text_prompt(const Request& r) {
    std::string text = "r";
    text += std::to_string(r.id);
    for (int i = 2; i <= r.prompt_len; ++i) {
        text += " w";
        text += std::to_string(i);
    }
    return text;
}

// The whole queue in that form, one line per request, in arrival order:
// {"prompt": "...", "output_tokens": answer_len, "request_id": id}.
inline std::string workload_jsonl(std::span<const Request> requests) {
    std::string out;
    for (const Request& r : requests) {
        out += "{\"prompt\": \"";
        out += text_prompt(r);
        out += "\", \"output_tokens\": ";
        out += std::to_string(r.answer_len);
        out += ", \"request_id\": ";
        out += std::to_string(r.id);
        out += "}\n";
    }
    return out;
}

}  // namespace kv
