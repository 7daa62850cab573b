"""Why did static_cache alone part from a Qwen3-shaped decoder's plain generate at step 1 on the H100, while
static_cache + decode_loop passed? On a GPU transformers' generate compiles its decoding forward by itself when the
cache is static (generation_config.compile_config; CPU only with _compile_all_devices). This greedy-generates one
prompt five ways and prints, per step, the largest top-8 log-probability difference against the dynamic cache in bf16
(the baseline) and against a float32 twin on the dynamic cache: static with its auto-compile, static with compile off,
and the dynamic cache again (its own noise).

    python3 lab/static-cache-parting/probe.py [--layers 28] [--steps 8]
"""

import argparse

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM


def generate(model, prompt, steps, **options):
    with torch.inference_mode():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=steps, min_new_tokens=steps, do_sample=False,
                             pad_token_id=0, return_dict_in_generate=True, output_logits=True, **options)
    return out.sequences[0, prompt.shape[1]:].tolist(), torch.stack(out.logits, dim=1)[0].float().log_softmax(-1)


def apart(a, b):
    """Per step, the largest |a - b| over a's top 8 ids."""
    top = a.topk(8, dim=-1).indices
    return (a.gather(-1, top) - b.gather(-1, top)).abs().amax(-1).tolist()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=28)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    config = Qwen3Config(hidden_size=2048, intermediate_size=6144, num_hidden_layers=args.layers, num_attention_heads=16,
                         num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=4096, tie_word_embeddings=True)
    model = Qwen3ForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    twin = Qwen3ForCausalLM(config).to("cuda").eval()
    twin.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
    torch.backends.cuda.matmul.allow_tf32 = False
    for seed in (1, 2, 3):
        prompt = torch.randint(0, config.vocab_size, (1, 128), generator=torch.Generator().manual_seed(seed)).cuda()
        base_tokens, base = generate(model, prompt, args.steps)
        _, reference = generate(twin, prompt, args.steps)
        print(f"seed {seed}: baseline tokens {base_tokens}; baseline vs twin per step {[round(x, 4) for x in apart(base, reference)]}")
        for name, options in (("dynamic again", {}), ("static, auto-compiled", {"cache_implementation": "static"}),
                              ("static, compile off", {"cache_implementation": "static", "disable_compile": True})):
            torch._dynamo.reset()
            tokens, logprobs = generate(model, prompt, args.steps, **options)
            same = next((i for i, (a, b) in enumerate(zip(tokens, base_tokens)) if a != b), None)
            print(f"  {name:<22} parts at {same}; vs baseline {[round(x, 4) for x in apart(base, logprobs)]}; vs twin "
                  f"{[round(x, 4) for x in apart(logprobs, reference)]}")


if __name__ == "__main__":
    main()
