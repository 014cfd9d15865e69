import torch
import torch.nn as nn
import torch.nn.functional as F
import math

# Define CUDA kernel for fused MLP operations
cuda_source = """
extern "C" __global__ void fused_mlp_forward(
    const float* input,
    float* output,
    const float* const* weights,
    const float* const* biases,
    const int batch_size,
    const int input_size,
    const int* layer_sizes,
    const int num_layers)
{
    // Each thread block handles a portion of the output features for a single batch item
    const int batch_idx = blockIdx.y;
    
    if (batch_idx >= batch_size) return;
    
    // Allocate shared memory for intermediate results
    extern __shared__ float shared_mem[];
    float* layer_input = shared_mem;
    float* layer_output = shared_mem + max(input_size, layer_sizes[0]);
    
    // Copy input to shared memory
    const int tid = threadIdx.x;
    for (int i = tid; i < input_size; i += blockDim.x) {
        layer_input[i] = input[batch_idx * input_size + i];
    }
    __syncthreads();
    
    // Process each layer
    float* current_input = layer_input;
    float* current_output = layer_output;
    
    for (int layer = 0; layer < num_layers; layer++) {
        const int out_features = layer_sizes[layer];
        const int in_features = (layer == 0) ? input_size : layer_sizes[layer - 1];
        const float* weight = weights[layer];
        const float* bias = biases[layer];
        
        // Each thread computes one or more output features
        for (int out_idx = tid; out_idx < out_features; out_idx += blockDim.x) {
            float sum = bias[out_idx];
            
            // Compute dot product
            for (int i = 0; i < in_features; ++i) {
                sum += current_input[i] * weight[out_idx * in_features + i];
            }
            
            // Apply ReLU activation for all but the last layer
            if (layer < num_layers - 1) {
                sum = (sum > 0.0f) ? sum : 0.0f;
            }
            
            current_output[out_idx] = sum;
        }
        
        __syncthreads();
        
        // Swap input and output buffers
        float* temp = current_input;
        current_input = current_output;
        current_output = temp;
    }
    
    // Copy final result to output
    const int final_layer = num_layers - 1;
    const int out_features = layer_sizes[final_layer];
    
    for (int i = tid; i < out_features; i += blockDim.x) {
        output[batch_idx * out_features + i] = current_input[i];
    }
}
"""

class CudaKernelManager:
    def __init__(self):
        self.kernel_loaded = False
        self.module = None
        try:
            import cupy as cp
            
            # Save the CUDA source to a file
            with open("fused_mlp_kernels.cu", "w") as f:
                f.write(cuda_source)
            
            # Compile the CUDA source
            self.module = cp.RawModule(path="fused_mlp_kernels.cu")
            self.fused_mlp = self.module.get_function("fused_mlp_forward")
            self.kernel_loaded = True
        except:
            self.kernel_loaded = False
    
    def run_fused_mlp(self, input_tensor, weights, biases, layer_sizes):
        if not self.kernel_loaded:
            return None
        
        import cupy as cp
        import numpy as np
        
        # Get tensor dimensions
        batch_size = input_tensor.size(0)
        input_size = input_tensor.size(1)
        num_layers = len(layer_sizes)
        output_size = layer_sizes[-1]
        
        # Allocate output tensor
        output = torch.empty(batch_size, output_size, device=input_tensor.device)
        
        # Prepare weight and bias pointers
        weight_ptrs = [w.data_ptr() for w in weights]
        bias_ptrs = [b.data_ptr() for b in biases]
        
        # Create arrays of pointers
        weight_ptrs_array = cp.array(weight_ptrs, dtype=cp.uint64)
        bias_ptrs_array = cp.array(bias_ptrs, dtype=cp.uint64)
        layer_sizes_array = cp.array(layer_sizes, dtype=cp.int32)
        
        # Calculate shared memory size
        max_features = max(input_size, max(layer_sizes))
        shared_mem_size = 2 * max_features * 4  # 2 buffers of float32
        
        # Configure kernel grid and blocks
        threads_per_block = min(512, max(32, max_features))
        blocks_per_grid_y = batch_size
        blocks_per_grid_x = 1
        
        # Run the kernel
        self.fused_mlp(
            (blocks_per_grid_x, blocks_per_grid_y, 1),
            (threads_per_block, 1, 1),
            (
                input_tensor.data_ptr(),
                output.data_ptr(),
                weight_ptrs_array.data.ptr,
                bias_ptrs_array.data.ptr,
                batch_size,
                input_size,
                layer_sizes_array.data.ptr,
                num_layers
            ),
            shared_mem=shared_mem_size
        )
        
        return output

# Create a global kernel manager
kernel_manager = CudaKernelManager()

class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_layer_sizes, output_size):
        """
        :param input_size: The number of input features
        :param hidden_layer_sizes: A list of ints containing the sizes of each hidden layer
        :param output_size: The number of output features
        """
        super(ModelNew, self).__init__()
        
        # Store dimensions
        self.input_size = input_size
        self.hidden_layer_sizes = hidden_layer_sizes
        self.output_size = output_size
        self.all_layer_sizes = hidden_layer_sizes + [output_size]
        
        # Initialize weights and biases
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        
        # Input to first hidden layer
        current_size = input_size
        for hidden_size in hidden_layer_sizes:
            weight = nn.Parameter(torch.empty(hidden_size, current_size))
            bias = nn.Parameter(torch.empty(hidden_size))
            
            # Initialize using the same method as nn.Linear
            nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
            fan_in, _ = nn.init._calculate_fan_in_and_fan_out(weight)
            bound = 1 / math.sqrt(fan_in)
            nn.init.uniform_(bias, -bound, bound)
            
            # Store pre-transposed weight for efficient matrix multiplication
            self.weights.append(nn.Parameter(weight.t().contiguous()))
            self.biases.append(bias)
            current_size = hidden_size
        
        # Final hidden layer to output
        weight = nn.Parameter(torch.empty(output_size, current_size))
        bias = nn.Parameter(torch.empty(output_size))
        
        # Initialize output layer
        nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
        fan_in, _ = nn.init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in)
        nn.init.uniform_(bias, -bound, bound)
        
        # Store pre-transposed weight for efficient matrix multiplication
        self.weights.append(nn.Parameter(weight.t().contiguous()))
        self.biases.append(bias)
        
        # Store direct references to parameters for faster access
        self.cached_weights = [w for w in self.weights]
        self.cached_biases = [b for b in self.biases]
        
        # Enable cuDNN benchmarking for better performance
        if torch.cuda.is_available():
            torch.backends.cudnn.benchmark = True
    
    def forward(self, x):
        """
        :param x: The input tensor, shape (batch_size, input_size)
        :return: The output tensor, shape (batch_size, output_size)
        """
        # Try to use our custom CUDA kernel
        if kernel_manager.kernel_loaded:
            result = kernel_manager.run_fused_mlp(
                x, 
                self.cached_weights, 
                self.cached_biases, 
                self.all_layer_sizes
            )
            if result is not None:
                return result
        
        # Fallback to optimized PyTorch implementation
        # Process hidden layers
        for i in range(len(self.hidden_layer_sizes)):
            # Use optimized fused operations
            x = torch.addmm(self.cached_biases[i], x, self.cached_weights[i])
            x.relu_()  # In-place ReLU for better performance
        
        # Output layer (no activation)
        x = torch.addmm(self.cached_biases[-1], x, self.cached_weights[-1])
        
        return x

# CRITICAL: Keep ALL hyperparameters EXACTLY as shown in the reference implementation
batch_size = 1
input_size = 1000
hidden_layer_sizes = [50, 50, 50, 50, 50, 50, 50, 50]  # Example of deep and narrow layers
output_size = 10

def get_inputs():
    # Use the EXACT same hyperparameters as in the reference implementation
    return [torch.randn(batch_size, input_size)]

def get_init_inputs():
    # Use the EXACT same hyperparameters as in the reference implementation
    return [input_size, hidden_layer_sizes, output_size]