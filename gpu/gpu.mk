# gpu/gpu.mk — the CUPTI injection library (included by the Makefile when CUDA is found).
gpu:
	@true
