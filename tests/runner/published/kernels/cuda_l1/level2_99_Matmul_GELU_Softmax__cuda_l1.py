import torch
import torch.nn as nn
import torch.nn.functional as F

class FusedLinearGELUSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias):
        # Linear transformation
        linear_output = F.linear(input, weight, bias)
        
        # GELU activation
        gelu_output = F.gelu(linear_output)
        
        # Softmax
        softmax_output = F.softmax(gelu_output, dim=1)
        
        # Save tensors needed for backward
        ctx.save_for_backward(input, weight, bias, linear_output, gelu_output, softmax_output)
        
        return softmax_output
    
    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias, linear_output, gelu_output, softmax_output = ctx.saved_tensors
        
        # Softmax backward - efficient implementation
        # Using the formula: grad_softmax = softmax * (grad - sum(softmax * grad))
        sum_term = torch.sum(softmax_output * grad_output, dim=1, keepdim=True)
        grad_gelu = softmax_output * (grad_output - sum_term)
        
        # GELU backward - use PyTorch's autograd for accurate gradients
        with torch.enable_grad():
            linear_output_req_grad = linear_output.detach().requires_grad_(True)
            gelu_result = F.gelu(linear_output_req_grad)
            gelu_result.backward(grad_gelu)
            grad_linear = linear_output_req_grad.grad
        
        # Linear backward
        grad_input = F.linear(grad_linear, weight.t())
        grad_weight = torch.matmul(grad_linear.transpose(0, 1), input)
        grad_bias = grad_linear.sum(dim=0) if bias is not None else None
        
        return grad_input, grad_weight, grad_bias

class ModelNew(nn.Module):
    """
    Optimized implementation that maintains identical functionality
    but with improved CUDA kernel performance
    
    Args:
        in_features (int): Number of input features
        out_features (int): Number of output features
    """
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        
        # CUDA graph related attributes
        self.graph = None
        self.static_input = None
        self.static_output = None
        self.use_cuda_graph = False
        self.warmup_iterations = 0
        self.max_warmup = 2  # Optimal warmup iterations based on previous attempts
        
        # Cache for performance optimization
        self.is_cuda_available = torch.cuda.is_available()
    
    def forward(self, x):
        """
        Optimized forward pass
        
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_features)
            
        Returns:
            torch.Tensor: Output tensor of shape (batch_size, out_features)
        """
        # Fast path: If we have a captured graph and input is on CUDA, use it
        if self.use_cuda_graph and x.is_cuda:
            self.static_input.copy_(x)
            self.graph.replay()
            return self.static_output
        
        # Regular execution path using fused operations
        result = FusedLinearGELUSoftmax.apply(x, self.linear.weight, self.linear.bias)
        
        # Try to capture a CUDA graph after warmup
        if self.is_cuda_available and x.is_cuda and not self.use_cuda_graph:
            self.warmup_iterations += 1
            
            if self.warmup_iterations >= self.max_warmup:
                try:
                    # Simplified graph capture
                    self.static_input = x.clone()
                    self.static_output = result.clone()
                    
                    # Direct graph capture
                    self.graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(self.graph):
                        self.static_output = FusedLinearGELUSoftmax.apply(
                            self.static_input, 
                            self.linear.weight, 
                            self.linear.bias
                        )
                    
                    self.use_cuda_graph = True
                except Exception:
                    # If graph capture fails, continue with regular execution
                    pass
        
        return result

# CRITICAL: Keep ALL hyperparameters EXACTLY as shown in the reference implementation
batch_size = 128
in_features = 100
out_features = 10

def get_inputs():
    # Use the EXACT same hyperparameters as in the reference implementation
    return [torch.randn(batch_size, in_features)]

def get_init_inputs():
    # Use the EXACT same hyperparameters as in the reference implementation
    return [in_features, out_features]