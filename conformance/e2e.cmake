# End-to-end: engine logits vs the double-precision reference transformer, and the
# bit-for-bit invariance of logits across chunking, threads and truncation.
# One binary, run as parallel ctest cases (conformance/README.md, "What test_e2e proves, case by
# case"): each case says what it proves; test_e2e_cases_cover_every_test keeps the split whole.
plumb_test(test_e2e LABELS e2e conformance TIMEOUT 900
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_e2e.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c
          ${CMAKE_CURRENT_SOURCE_DIR}/kernel_sets.c
          ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_transformer.c
  CASES
    # every architecture x weight type against the double-precision reference, on every set
    reference=e2e_logits_match_reference_for_every_arch_and_type
    # F16 KV, RoPE scalings, sliding windows with sinks against the reference, every set
    kv_rope_window=e2e_f16_kv,e2e_rope_scaling,e2e_sliding_window_with_sinks
    # mixture of experts against the reference, every set
    moe=e2e_moe_matches_reference
    # the same bits whatever the chunking, threads, pieces and truncation, every set
    invariance=^logits_identical_across_chunks_threads_and_truncation
    invariance_window=sliding_window_logits_identical_across_chunks_and_threads
    invariance_moe=moe_logits_identical_across_chunks_threads_and_truncation
    # repacked weights and experts give the same bits, every set
    repack=repacked_weights_give_identical_logits,moe_repacked_experts_give_identical_logits
    # session and model edges: full context, bad configs and tokens, refused files, the set
    # chosen once, info, allocation failure at every n
    edges=context_full,bad_kv,eval_rejects,model_rejects,model_info,kernel_set_is,session_survives=quick)
# The longest cases start first when ctest has no timings yet (a fresh clone).
set_tests_properties(test_e2e_invariance test_e2e_reference PROPERTIES COST 100)
plumb_test(test_sampler_chain LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sampler_chain.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c)
# No file runs silently wrong: tensors without a role, keys plumb does not read, values it does not
# compute are refused by name; the keys listed as changing nothing change no logit.
plumb_test(test_arch LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_arch.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c)
# What every architecture of the table must have (test_arch_contract.c): a tiny model that loads
# and matches the reference on every kernel set, a checkpoint convert reads, a fuzz seed, an
# oracle case or a reasoned none.
plumb_test(test_arch_contract LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_arch_contract.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c
          ${CMAKE_CURRENT_SOURCE_DIR}/kernel_sets.c
          ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_transformer.c)
set_property(TEST test_arch_contract APPEND PROPERTY ENVIRONMENT
  "PLUMB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
