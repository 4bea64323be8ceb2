"""The gpu profile's servers: which vLLM processes run where (GPU layout), with which flags."""
